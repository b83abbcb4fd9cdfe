package audit_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
)

// metaSchema keeps its header in a field called "meta", under a record
// name of its own: only --header-field meta finds it.
const metaSchema = `{"type":"record","name":"Signup","namespace":"com.example.events","fields":[
 {"name":"plan","type":"string","default":"free"},
 {"name":"meta","type":{"type":"record","name":"EventHeader","fields":[
   {"name":"time","type":"long"},
   {"name":"server","type":"string"},
   {"name":"service","type":"string"},
   {"name":"guid","type":{"type":"fixed","name":"Guid","size":16}}]}}]}`

// A new user's pipeline, with the commands a person runs: events under
// the user's own header record (com.example.events.EventHeader, server and
// service left for the producer to fill), and under a header field of
// another name (--header-field meta), are produced with `tributary
// produce --schema` and counted on the broker with `audit count --tier
// live`: the report finds both tiers complete, neither counted as no_time.
func TestCommandsUsersOwnHeader(t *testing.T) {
	env := audittest.Start(t)
	createTopic(t, env.Broker.Addr, "clicks", 1)
	createTopic(t, env.Broker.Addr, "signups", 1)
	metaFile := filepath.Join(t.TempDir(), "signup.avsc")
	if err := os.WriteFile(metaFile, []byte(metaSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := pastWindows(2)
	from, to := ws[0].Format(time.RFC3339), ws[1].Add(audit.DefaultWindow).Format(time.RFC3339)
	common := []string{"--brokers", env.Broker.Addr, "--registry", env.RegistryURL}
	const n = 30
	for _, tc := range []struct {
		topic, schema, field, line string
	}{
		{"clicks", "../testdata/schemas/custom-header.avsc", "header", `{"header": {"time": %d, "server": null}, "target": "buy"}`},
		{"signups", metaFile, "meta", `{"meta": {"time": %d}, "plan": "pro"}`},
	} {
		var in strings.Builder
		for _, w := range ws {
			for i := range n {
				fmt.Fprintf(&in, tc.line+"\n", w.Add(time.Duration(i)*time.Second).UnixMilli())
			}
		}
		_, stderr, code := tributary(t, in.String(), append([]string{"produce", "--topic", tc.topic, "--schema", tc.schema,
			"--header-field", tc.field, "--server", "fe-1"}, common...)...)
		if code != 0 || strings.Contains(stderr, "no_time") {
			t.Fatalf("produce %s: exit %d\n%s", tc.topic, code, stderr)
		}
		out, stderr, code := tributary(t, "", append([]string{"audit", "count", "--tier", "live", "--source", "live-" + tc.topic,
			"--topics", tc.topic, "--header-field", tc.field, "--from", from, "--to", to}, common...)...)
		if code != 0 {
			t.Fatalf("audit count %s: exit %d\n%s%s", tc.topic, code, out, stderr)
		}
	}
	out, stderr, code := tributary(t, "", append([]string{"audit", "report", "--from", from, "--to", to, "--format", "json"}, common...)...)
	if code != 0 {
		t.Fatalf("audit report: exit %d\n%s", code, stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out)
	}
	if len(rows) != 2*2*2 {
		t.Fatalf("%d rows, want 8 (2 topics × 2 windows × producer, live):\n%s", len(rows), out)
	}
	for _, r := range rows {
		if r["produced"] != float64(n) || r["received"] != float64(n) || r["completeness"] != 100.0 || r["no_time"] != nil && r["no_time"] != 0.0 {
			t.Errorf("row %v: want %d produced and received, complete", r, n)
		}
	}
}
