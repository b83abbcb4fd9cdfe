package registry_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/schema/internal/srtest"
)

// TestAPI runs the scripts in testdata/api/*.txt against a fresh registry
// each. A script is the specification of the REST API, in raw HTTP:
//
//	# comment
//	let NAME = <Avro schema JSON>            $NAME expands to it as a JSON string
//	METHOD /path [request body]              METHOD[type] sets the Content-Type
//	STATUS [expected body | error_code]
//
// An expected body is compared as JSON (or as text when it is not JSON);
// a bare error code checks Confluent's error body {"error_code", "message"}
// with a non-empty message. Steps are separated by blank lines.
func TestAPI(t *testing.T) {
	files, _ := filepath.Glob("testdata/api/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts in testdata/api")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			runScript(t, f, srtest.Start(t).URL)
		})
	}
}

func runScript(t *testing.T, path, base string) {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	vars := map[string]string{}
	expand := func(s string) string {
		return varRef.ReplaceAllStringFunc(s, func(ref string) string {
			if v, ok := vars[ref[1:]]; ok {
				return v
			}
			t.Fatalf("%s: undefined %s", path, ref)
			return ""
		})
	}
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	var req string
	var reqLine int
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "let "):
			name, val, ok := strings.Cut(strings.TrimPrefix(line, "let "), " = ")
			if !ok {
				t.Fatalf("%s:%d: want let NAME = VALUE", path, n)
			}
			q, _ := json.Marshal(val)
			vars[strings.TrimSpace(name)] = string(q)
		case req == "":
			req, reqLine = expand(line), n
		default:
			step(t, base, path, reqLine, req, expand(line))
			req = ""
		}
	}
	if req != "" {
		t.Fatalf("%s:%d: request without expected answer", path, reqLine)
	}
}

var varRef = regexp.MustCompile(`\$[A-Za-z0-9_]+`)

func step(t *testing.T, base, path string, line int, req, want string) {
	t.Helper()
	method, rest, _ := strings.Cut(req, " ")
	url, body, _ := strings.Cut(rest, " ")
	ct := "application/vnd.schemaregistry.v1+json"
	if m, c, ok := strings.Cut(method, "["); ok { // POST[text/plain] overrides the content type
		method, ct = m, strings.TrimSuffix(c, "]")
	}
	hreq, err := http.NewRequest(method, base+url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s:%d: %v", path, line, err)
	}
	if body != "" {
		hreq.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatalf("%s:%d: %s: %v", path, line, req, err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	wantStatus, wantBody, _ := strings.Cut(want, " ")
	if strconv.Itoa(resp.StatusCode) != wantStatus {
		t.Errorf("%s:%d: %s\n  status %d, want %s; body %s", path, line, req, resp.StatusCode, wantStatus, got)
		return
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.schemaregistry.v1+json" {
		t.Errorf("%s:%d: %s: content type %q", path, line, req, ct)
	}
	if wantBody == "" {
		return
	}
	if code, err := strconv.Atoi(wantBody); err == nil && resp.StatusCode >= 300 {
		var e struct {
			Code    int    `json:"error_code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(got, &e); err != nil || e.Code != code || e.Message == "" {
			t.Errorf("%s:%d: %s\n  error body %s, want error_code %d and a message", path, line, req, got, code)
		}
		return
	}
	if !sameJSON(got, []byte(wantBody)) {
		t.Errorf("%s:%d: %s\n  got  %s\n  want %s", path, line, req, got, wantBody)
	}
}

// sameJSON compares two JSON texts by value, or as text if either is not
// JSON (the /schema endpoints return the schema itself).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
