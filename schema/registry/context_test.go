package registry

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestApplyContexts: on replay, each context has its own ids: id 1 in two
// contexts is two schemas, a jump ahead is measured against the context's
// own counter, and the checkpoint's highest id covers every context.
func TestApplyContexts(t *testing.T) {
	const a = `{"type":"record","name":"A","fields":[]}`
	const b = `{"type":"record","name":"B","fields":[]}`
	st := newState()
	for i, v := range []schemaValue{
		{Subject: "s", Version: 1, ID: 1, Schema: a},
		{Subject: ":.x:s", Version: 1, ID: 1, Schema: b},
		{Subject: ":.x:t", Version: 1, ID: 2, Schema: a},
	} {
		r := schemaRecord(v)
		r.Offset = int64(i)
		if why := st.apply(r); why != "" {
			t.Fatalf("record %d: %s", i, why)
		}
	}
	if st.schemas[1].schema.Text != a || st.space(".x").schemas[1].schema.Text != b || st.space(".x").schemas[2].schema.Text != a {
		t.Errorf("ids are not per context")
	}
	if st.nextIDIn("") != 2 || st.nextIDIn(".x") != 3 || st.highestID() != 2 {
		t.Errorf("next ids %d, %d; highest %d", st.nextIDIn(""), st.nextIDIn(".x"), st.highestID())
	}
	r := schemaRecord(schemaValue{Subject: "u", Version: 1, ID: 3, Schema: b})
	r.Offset = 3
	if why := st.apply(r); !strings.Contains(why, "ahead of the next id 2") {
		t.Errorf("a jump past the default context's counter: %q", why)
	}
}

// TestInContext: /contexts/{ctx}/... is rewritten as Confluent rewrites it.
func TestInContext(t *testing.T) {
	for _, tt := range []struct{ in, out string }{
		{"/contexts/.c/subjects/s/versions", "/subjects/:.c:s/versions"},
		{"/contexts/.c/subjects/:.d:s/versions/1", "/subjects/:.d:s/versions/1"},
		{"/contexts/.c/subjects", "/subjects?subjectPrefix=%3A.c%3A"},
		{"/contexts/.c/subjects?subjectPrefix=a", "/subjects?subjectPrefix=%3A.c%3Aa"},
		{"/contexts/.c/config", "/config/:.c:"},
		{"/contexts/.c/mode/s", "/mode/:.c:s"},
		{"/contexts/.c/schemas/ids/3", "/schemas/ids/3?subject=%3A.c%3A"},
		{"/contexts/.c/schemas/ids/3/versions?subject=s", "/schemas/ids/3/versions?subject=%3A.c%3As"},
		{"/contexts/.c/compatibility/subjects/s/versions/latest", "/compatibility/subjects/:.c:s/versions/latest"},
		{"/contexts/./subjects/s/versions", "/subjects/s/versions"},
		{"/contexts/:.c:/subjects/s/versions", "/subjects/:.c:s/versions"},
	} {
		r := httptest.NewRequest("GET", tt.in, nil)
		if !inContext(r) {
			t.Errorf("%s: not rewritten", tt.in)
			continue
		}
		if got := r.URL.RequestURI(); got != tt.out {
			t.Errorf("%s: %s, want %s", tt.in, got, tt.out)
		}
	}
	if inContext(httptest.NewRequest("GET", "/contexts/.c", nil)) || inContext(httptest.NewRequest("GET", "/subjects", nil)) {
		t.Error("a path outside a context was rewritten")
	}
}

// FuzzContextPath sends requests with arbitrary paths under /contexts/ to
// a node: whatever the path, the answer has Confluent's shape, never a 5xx
// or a panic.
func FuzzContextPath(f *testing.F) {
	for _, seed := range []string{
		"/contexts/.c/subjects/s/versions", "/contexts/.c/schemas/ids/1?subject=x", "/contexts/.c/config",
		"/contexts/./mode/s", "/contexts/%3A.c%3A/subjects", "/contexts/.c/subjects/%zz", "/contexts//subjects/s",
		"/contexts/.c/compatibility/subjects/s/versions/latest", "/contexts/.c/contexts/.d/subjects",
	} {
		f.Add("GET", seed)
		f.Add("POST", seed)
	}
	srv, err := NewWithLog(f.Context(), NewMemoryLog().Open(), Config{Logger: quiet()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close() })
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, method, path string) {
		if method != "GET" && method != "POST" && method != "DELETE" && method != "PUT" {
			return
		}
		req, err := http.NewRequest(method, "http://registry"+path, strings.NewReader(`{"schema":"\"string\""}`))
		if err != nil || !strings.HasPrefix(req.URL.Path, "/contexts/") {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	})
}

// TestContextRecords: the first registration in a context also writes the
// CONTEXT record Confluent's registry writes, once; replay skips it.
func TestContextRecords(t *testing.T) {
	mem := NewMemoryLog()
	srv, err := NewWithLog(t.Context(), mem.Open(), Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.Handler()
	for _, path := range []string{"/subjects/:.c:s/versions", "/subjects/:.c:t/versions", "/subjects/s/versions", "/contexts/.d/subjects/s/versions"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"schema":"\"string\""}`)))
		if rec.Code != 200 {
			t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	var contexts []string
	for _, r := range mem.Records() {
		if strings.Contains(string(r.Key), `"keytype":"CONTEXT"`) {
			contexts = append(contexts, string(r.Key)+" "+string(r.Value))
		}
	}
	want := []string{
		`{"keytype":"CONTEXT","tenant":"default","context":".c","magic":0} {"tenant":"default","context":".c"}`,
		`{"keytype":"CONTEXT","tenant":"default","context":".d","magic":0} {"tenant":"default","context":".d"}`,
	}
	if strings.Join(contexts, "\n") != strings.Join(want, "\n") {
		t.Errorf("CONTEXT records:\n%s\nwant\n%s", strings.Join(contexts, "\n"), strings.Join(want, "\n"))
	}
	st := newState()
	for _, r := range mem.Records() {
		if why := st.apply(r); why != "" {
			t.Errorf("replay skipped a record: %s", why)
		}
	}
}
