package registry_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/schema/internal/srtest"
)

// deepSchema is a valid Avro schema nested levels records deep: parsing it
// costs time that grows faster than its size.
func deepSchema(levels int) string {
	return strings.Repeat(`{"type":"record","name":"R","fields":[{"name":"f","type":`, levels) +
		`"int"` + strings.Repeat(`}]}`, levels)
}

// A schema nested deeper than the limit, or larger than it, is refused
// with 42201 naming the limit before it is parsed, by every endpoint that
// takes a schema.
func TestSchemaLimits(t *testing.T) {
	reg := srtest.Start(t)
	deep, _ := json.Marshal(map[string]string{"schema": deepSchema(10000)})
	large, _ := json.Marshal(map[string]string{"schema": `{"type":"string","doc":"` + strings.Repeat("x", 1<<20) + `"}`})
	for _, path := range []string{"/subjects/s/versions", "/subjects/s", "/compatibility/subjects/s/versions/latest"} {
		for _, tc := range []struct {
			name, body, want string
		}{
			{"deep", string(deep), "deeper than 128 levels"},
			{"large", string(large), "the limit is 1048576 bytes"},
		} {
			resp, err := http.Post(reg.URL+path, "application/vnd.schemaregistry.v1+json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Code    int    `json:"error_code"`
				Message string `json:"message"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 422 || body.Code != 42201 || !strings.Contains(body.Message, tc.want) {
				t.Errorf("POST %s with a %s schema: %d %+v (%v); want 422, 42201 saying %q", path, tc.name, resp.StatusCode, body, err, tc.want)
			}
		}
	}
}

// BenchmarkDeepSchemaRefused measures what a deep schema costs the
// registry now that it is refused before parsing.
func BenchmarkDeepSchemaRefused(b *testing.B) {
	reg := srtest.Start(b)
	body, _ := json.Marshal(map[string]string{"schema": deepSchema(10000)})
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		resp, err := http.Post(reg.URL+"/subjects/s", "application/json", strings.NewReader(string(body)))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}
