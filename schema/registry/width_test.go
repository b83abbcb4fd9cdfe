package registry

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// unionOfRecords is a union of n record branches, each a record of its own
// name: the shape that took a registry to 22 GB with 13,000 branches.
func unionOfRecords(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"record","name":"R%d","fields":[{"name":"f","type":"int"}]}`, i)
	}
	b.WriteByte(']')
	return b.String()
}

// wideRecord is a record of n int fields, plus extra fields with defaults:
// evolving it by one field is a compatibility check of n+1 fields
// against n.
func wideRecord(n, extra int) string {
	var b strings.Builder
	b.WriteString(`{"type":"record","name":"W","fields":[`)
	for i := range n + extra {
		if i > 0 {
			b.WriteByte(',')
		}
		if i < n {
			fmt.Fprintf(&b, `{"name":"f%d","type":"int"}`, i)
		} else {
			fmt.Fprintf(&b, `{"name":"f%d","type":"int","default":0}`, i)
		}
	}
	b.WriteString(`]}`)
	return b.String()
}

// post sends one schema to path on h and returns the status, the body and
// the bytes allocated meanwhile.
func post(t testing.TB, h http.Handler, path, schema string) (int, string, uint64) {
	body, _ := json.Marshal(map[string]string{"schema": schema})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body))))
	runtime.ReadMemStats(&after)
	return rec.Code, rec.Body.String(), after.TotalAlloc - before.TotalAlloc
}

// enumOf is an enum of n symbols.
func enumOf(n int) string {
	syms := make([]string, n)
	for i := range syms {
		syms[i] = fmt.Sprintf(`"S%d"`, i)
	}
	return `{"type":"enum","name":"E","symbols":[` + strings.Join(syms, ",") + `]}`
}

// manyUnions is a record of n fields, each a union of w fixed types.
func manyUnions(n, w int) string {
	fields := make([]string, n)
	for i := range fields {
		branches := make([]string, w)
		for j := range branches {
			branches[j] = fmt.Sprintf(`{"type":"fixed","name":"F%d_%d","size":1}`, i, j)
		}
		fields[i] = fmt.Sprintf(`{"name":"u%d","type":[%s]}`, i, strings.Join(branches, ","))
	}
	return `{"type":"record","name":"M","fields":[` + strings.Join(fields, ",") + `]}`
}

// nestedRecords is a record of n fields, each a record of three fields:
// narrow everywhere, but 9 nodes a field.
func nestedRecords(n int) string {
	fields := make([]string, n)
	for i := range fields {
		fields[i] = fmt.Sprintf(`{"name":"n%d","type":{"type":"record","name":"N%d","fields":[{"name":"a","type":"int"},{"name":"b","type":"int"},{"name":"c","type":"int"}]}}`, i, i)
	}
	return `{"type":"record","name":"O","fields":[` + strings.Join(fields, ",") + `]}`
}

// A schema past a width or node limit is refused with 42201 naming the
// flag, before it is parsed, at a small fraction of what it cost to
// accept. Before: the 13,000-branch union was registered having allocated
// 409 MB, the 27,000-field record 424 MB (and evolving it by one field
// allocated 21.7 GB in 24 s).
func TestWidthLimits(t *testing.T) {
	srv, err := NewWithLog(t.Context(), NewMemoryLog().Open(), Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		name, schema, flag string
		maxAlloc           uint64
	}{
		{"a union of 13,000 records", unionOfRecords(13000), "--schema-max-union-branches", 32 << 20},
		{"a record of 27,000 fields", wideRecord(27000, 0), "--schema-max-fields", 32 << 20},
		{"an enum of 3,000 symbols", enumOf(3000), "--schema-max-fields", 8 << 20},
		{"100 unions of 60 branches", manyUnions(100, 60), "--schema-max-union-branches", 8 << 20},
		{"1,500 nested records", nestedRecords(1500), "--schema-max-nodes", 8 << 20},
	} {
		code, body, alloc := post(t, srv.Handler(), "/subjects/s/versions", tc.schema)
		t.Logf("%s (%d KB): %d, %.1f MB allocated", tc.name, len(tc.schema)>>10, code, float64(alloc)/(1<<20))
		if code != 422 || !strings.Contains(body, `"error_code":42201`) || !strings.Contains(body, tc.flag) {
			t.Errorf("%s: %d %s; want 422, 42201 naming %s", tc.name, code, body, tc.flag)
		}
		if alloc > tc.maxAlloc {
			t.Errorf("%s: refusing it allocated %d MB, want at most %d MB", tc.name, alloc>>20, tc.maxAlloc>>20)
		}
	}
}

// Schemas at the limits register, and evolve under BACKWARD: the limits
// leave room for what people write, and the widest allowed check ends
// well within the deadline (about 0.2 s each on a laptop core; the race
// detector makes them ten times slower, hence the longer deadline here).
func TestSchemasAtTheLimitsRegister(t *testing.T) {
	srv, err := NewWithLog(t.Context(), NewMemoryLog().Open(), Config{Logger: quiet(), CheckTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct{ subject, v1, v2 string }{
		{"union", unionOfRecords(499), unionOfRecords(500)},
		{"record", wideRecord(1999, 0), wideRecord(1999, 1)},
		{"unions", manyUnions(50, 70), manyUnions(50, 70)},
	} {
		for i, schema := range []string{tc.v1, tc.v2} {
			start := time.Now()
			code, body, alloc := post(t, srv.Handler(), "/subjects/"+tc.subject+"/versions", schema)
			t.Logf("%s v%d: %d in %v, %.1f MB allocated", tc.subject, i+1, code, time.Since(start).Round(time.Millisecond), float64(alloc)/(1<<20))
			if code != 200 {
				t.Fatalf("%s v%d: %d %s", tc.subject, i+1, code, body)
			}
		}
	}
}

// A compatibility check that runs past CheckTimeout is answered with 42201
// naming the flag, and the registry keeps serving. Before, a check ran for
// as long as it took (24 s for a 27,000-field record) under the state's
// lock.
func TestCompatibilityCheckDeadline(t *testing.T) {
	srv, err := NewWithLog(t.Context(), NewMemoryLog().Open(), Config{Logger: quiet(), CheckTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.Handler()
	if code, body, _ := post(t, h, "/subjects/w/versions", wideRecord(1999, 0)); code != 200 {
		t.Fatalf("register: %d %s", code, body)
	}
	for _, path := range []string{"/subjects/w/versions", "/compatibility/subjects/w/versions/latest"} {
		code, body, _ := post(t, h, path, wideRecord(1999, 1))
		if code != 422 || !strings.Contains(body, `"error_code":42201`) || !strings.Contains(body, "--schema-check-timeout") {
			t.Errorf("POST %s past the deadline: %d %s; want 422, 42201 naming --schema-check-timeout", path, code, body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/subjects/w/versions", nil))
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "[1]" {
		t.Errorf("versions after the refused checks: %d %s, want [1]", rec.Code, rec.Body)
	}
}

// measure counts what sits where the Avro specification puts schemas, and
// nothing in defaults, docs or custom properties.
func TestMeasure(t *testing.T) {
	for _, tc := range []struct {
		schema                 string
		nodes, branches, width int
	}{
		{`"int"`, 1, 0, 0},
		{`["null","int"]`, 3, 2, 0},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":["null","int"]},{"name":"b","type":"int"}]}`, 7, 2, 2},
		// a default, a doc and a custom property that look like unions
		{`{"type":"record","name":"R","x":[1,2,3],"fields":[{"name":"a","type":{"type":"array","items":"int"},"default":[1,2,3,4],"doc":"[["}]}`, 4, 0, 1},
		{`{"type":"enum","name":"E","symbols":["A","B","C"]}`, 1, 0, 3},
		// keys spelled with escapes are the keys the parser sees
		{`{"\u0074ype":"record","name":"R","f\u0069elds":[{"name":"a","type":"int"},{"name":"b","type":"int"}]}`, 5, 0, 2},
		// unions of 2, 3 and 3 measure √22; records of 6 and 8 measure 10
		{`[{"type":"map","values":["a","b","c"]},{"type":"array","items":["a","b","c"]}]`, 11, 4, 0},
		{`{"type":"record","name":"R","fields":[` + strings.Repeat(`{"name":"a","type":"int"},`, 5) +
			`{"name":"r","type":{"type":"record","name":"S","fields":[` + strings.TrimSuffix(strings.Repeat(`{"name":"a","type":"int"},`, 8), ",") + `]}}]}`,
			1 + 5*2 + 1 + 1 + 8*2, 0, 10},
		{`{"type":"record","fields":[`, 1, 0, 0}, // not JSON: measured as far as it goes
	} {
		sh, deep := measure(tc.schema, 128)
		if deep || sh.nodes != tc.nodes || sh.branches() != tc.branches || sh.fields() != tc.width {
			t.Errorf("%s: %d nodes, unions %d wide, records %d wide (deep %v); want %d, %d, %d",
				tc.schema, sh.nodes, sh.branches(), sh.fields(), deep, tc.nodes, tc.branches, tc.width)
		}
	}
}

// Requests that carry schemas read and parse a few at a time, so many
// clients sending large bodies at once hold bounded memory: 48 clients
// sending 9 MiB bodies slowly (6 MiB, a pause, the rest), each read up to
// the 8 MiB limit before it is refused. Before, the heap grew by 280 MB
// (every client's 6 MiB held at once); now by about 120 MB.
func TestConcurrentSchemaRequestsHoldBoundedMemory(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))  // 8 slots, whatever the machine
	defer debug.SetGCPercent(debug.SetGCPercent(20)) // the heap near what is live
	// A long SyncTimeout: under the race detector the requests wait their
	// turn longer than the default lets them.
	srv, err := NewWithLog(t.Context(), NewMemoryLog().Open(), Config{Logger: quiet(), SyncTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	body := `{"schema":"` + strings.Repeat("x", 9<<20) + `"}`
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			slow := &pausingReader{first: strings.NewReader(body[:6<<20]), rest: strings.NewReader(body[6<<20:])}
			srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/subjects/s", slow))
			if rec.Code != 422 {
				t.Errorf("a 9 MiB body: %d %s, want 422", rec.Code, rec.Body)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	grew := (peak.Load() - min(peak.Load(), base.HeapInuse)) >> 20
	t.Logf("48 concurrent 9 MiB bodies: heap grew by at most %d MB (%d requests at a time)", grew, cap(srv.parses))
	if grew > 200 {
		t.Errorf("heap grew by %d MB, want at most 200 MB (for 8 requests at a time)", grew)
	}
}

// pausingReader reads first, pauses, then reads rest: a client sending
// slowly, holding what the server has read of its body meanwhile.
type pausingReader struct {
	first, rest *strings.Reader
	paused      bool
}

func (p *pausingReader) Read(b []byte) (int, error) {
	if p.first.Len() > 0 {
		return p.first.Read(b)
	}
	if !p.paused {
		p.paused = true
		time.Sleep(200 * time.Millisecond)
	}
	return p.rest.Read(b)
}

// A schema already on the topic is served whatever its width: the width
// and node limits bound requests, not replay, so a schema registered
// before them (or under higher ones) stays readable by id, and records
// carrying it can still be decoded.
func TestReplayServesSchemasOverTheRequestLimits(t *testing.T) {
	mem := NewMemoryLog()
	wide := unionOfRecords(600)
	if _, err := mem.Open().Append(t.Context(), schemaRecord(schemaValue{Subject: "wide", Version: 1, ID: 1, Schema: wide})); err != nil {
		t.Fatal(err)
	}
	srv, err := NewWithLog(t.Context(), mem.Open(), Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/schemas/ids/1/schema", nil))
	if rec.Code != 200 || rec.Body.String() != wide {
		t.Fatalf("GET /schemas/ids/1/schema: %d, %d bytes; want the stored 600-branch union", rec.Code, rec.Body.Len())
	}
	if code, body, _ := post(t, srv.Handler(), "/subjects/other/versions", wide); code != 422 || !strings.Contains(body, "--schema-max-union-branches") {
		t.Fatalf("registering it anew: %d %s; want 42201 naming --schema-max-union-branches", code, body)
	}
}
