package registry_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/tributary-io/tributary/schema/registry"
)

// TestModesReplay sets modes and imports through one node and checks that
// a node started afterwards on the same log (as after a restart) serves
// them: the modes, the imported ids and versions, and ids handed out above
// them.
func TestModesReplay(t *testing.T) {
	log := registry.NewMemoryLog()
	a := srtest.StartOn(t, log)
	do := func(r *srtest.Registry, method, path, body string, want int) string {
		t.Helper()
		req, _ := http.NewRequest(method, r.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, sb.String(), want)
		}
		return strings.TrimSpace(sb.String())
	}
	do(a, "PUT", "/mode", `{"mode":"IMPORT"}`, 200)
	do(a, "POST", "/subjects/s/versions", `{"schema":"\"string\"","id":500,"version":4}`, 200)
	do(a, "PUT", "/mode", `{"mode":"READWRITE"}`, 200)
	do(a, "PUT", "/mode/s", `{"mode":"READONLY"}`, 200)

	b := srtest.StartOn(t, log)
	if got := do(b, "GET", "/mode/s", "", 200); got != `{"mode":"READONLY"}` {
		t.Errorf("subject mode after replay: %s", got)
	}
	if got := do(b, "GET", "/subjects/s/versions/4", "", 200); !strings.Contains(got, `"id":500`) {
		t.Errorf("imported version after replay: %s", got)
	}
	do(b, "POST", "/subjects/s/versions", `{"schema":"\"int\""}`, 422)
	if got := do(b, "POST", "/subjects/t/versions", `{"schema":"\"int\""}`, 200); got != `{"id":501}` {
		t.Errorf("first id after the import: %s, want 501", got)
	}
}
