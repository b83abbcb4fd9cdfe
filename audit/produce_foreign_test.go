package audit_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema"
)

// orderProto defines the header before the event, so the root message
// (the event) is the second one: its records carry message indexes [1].
const orderProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Header { int64 time = 1; string server = 2; string service = 3; bytes guid = 4; }
message Order {
  Header header = 1;
  string id = 2;
  message Line { string sku = 1; int32 qty = 2; }
  repeated Line lines = 3;
  State state = 4;
  google.protobuf.Timestamp placed = 5;
  optional double weight = 6;
}
enum State { NEW = 0; PAID = 1; }
`

// consumeAll reads the n records of topic, failing the test if they do
// not all come.
func consumeAll(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := audittest.Client(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: %d records of %d read", topic, len(out), n)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// confluentRead reads the n records of topic with Confluent's Python
// deserializers (produced.py) and returns each as the JSON they give.
func confluentRead(t *testing.T, env *audittest.Env, topic, format string, n int) []map[string]any {
	t.Helper()
	testenv.Needs(t, testenv.Python)
	if exec.Command("python3", "-c", "import confluent_kafka.schema_registry.protobuf, jsonschema").Run() != nil {
		t.Fatal("Python's confluent-kafka with its Protobuf and JSON serializers is missing: run scripts/install-deps.sh (.ci/run does)")
	}
	cmd := exec.CommandContext(t.Context(), "python3", filepath.Join(foreignScripts, "produced.py"), env.RegistryURL, env.Broker.Addr, topic, format, fmt.Sprint(n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("produced.py %s: %v\n%s", topic, err, stderr.String())
	}
	var recs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("produced.py printed %q: %v", l, err)
		}
		recs = append(recs, m)
	}
	if len(recs) != n {
		t.Fatalf("produced.py read %d records of %s, want %d", len(recs), topic, n)
	}
	return recs
}

// sameJSON compares a record as Confluent's deserializers read it with
// the JSON text it should be.
func sameJSON(t *testing.T, what string, got map[string]any, want string) {
	t.Helper()
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s as Confluent's deserializer reads it:\n got %s\nwant %s", what, g, want)
	}
}

// produceLines runs `tributary produce` over lines and checks that it
// fails naming the one bad line, on line bad, and its reason.
func produceLines(t *testing.T, lines []string, bad int, reason string, args ...string) {
	t.Helper()
	_, stderr, code := tributary(t, strings.Join(lines, "\n")+"\n", append([]string{"produce", "--server", "fe-1"}, args...)...)
	want := fmt.Sprintf("1 lines were not valid events (see the warnings above; the first, line %d: ", bad)
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, reason) || !strings.Contains(stderr, "counts published to _audit") {
		t.Fatalf("produce %v: exit %d, want 1 naming line %d and %q, counts published\n%s", args, code, bad, reason, stderr)
	}
	if want := fmt.Sprintf("produced %d events", len(lines)-1); !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
}

// checkAudited checks the producer's counts for topic in window w, and
// those of the broker (audit count's scan): both n, complete.
// The refused line is counted malformed, in the window of when it was
// read (some time since produced).
func checkAudited(t *testing.T, env *audittest.Env, topic string, w time.Time, n int, produced time.Time) {
	t.Helper()
	snapshot(t, env.Broker.Addr, env.Broker.Addr, env.Registry, "live", []time.Time{w}, topic)
	var malformed int64
	for _, x := range reconcile(t, env.Broker.Addr, env.Registry, []time.Time{audit.WindowStart(produced, audit.DefaultWindow), audit.WindowStart(time.Now(), audit.DefaultWindow)}).Rows {
		if x.Topic == topic && x.Tier == "producer" {
			malformed += x.Malformed
		}
	}
	if malformed != 1 {
		t.Errorf("%s: the producer counted %d malformed events, want the 1 refused line", topic, malformed)
	}
	r := reconcile(t, env.Broker.Addr, env.Registry, []time.Time{w})
	if p := row(t, r, topic, w, "producer"); p.Produced != int64(n) || p.NoTime != 0 {
		t.Errorf("%s producer row %+v: want %d produced, none without a time", topic, p, n)
	}
	if l := row(t, r, topic, w, "live"); l.Received != int64(n) || l.Completeness != 100 {
		t.Errorf("%s live row %+v: want %d received, complete", topic, l, n)
	}
}

// `tributary produce --schema order.proto`: JSON lines become shop.Order
// messages (the root message) in Confluent's Protobuf envelope, with the
// header's server, service and guid filled in, counted by the audited
// producer through its WAL; a line that is not an Order is refused with
// its line number and reason while the others go through. Each record
// reads back field by field, and the producer's and the broker's counts
// are the records sent.
func TestProduceProtobufEvents(t *testing.T) {
	env := audittest.Start(t)
	createTopic(t, env.Broker.Addr, "orders", 1)
	dir := t.TempDir()
	file := filepath.Join(dir, "order.proto")
	if err := os.WriteFile(file, []byte(orderProto), 0o644); err != nil {
		t.Fatal(err)
	}
	w := pastWindows(1)[0]
	const n = 20
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"header": {"time": "%d"}, "id": "o-%d", "lines": [{"sku": "a", "qty": %d}], "state": "PAID", "placed": "2026-01-02T03:04:05.000006Z"%s}`,
			w.Add(time.Duration(i)*time.Second).UnixMilli(), i, i, map[bool]string{true: `, "weight": 1.5`}[i%2 == 0]))
	}
	lines = append(lines[:5], append([]string{`{"header": {"time": "1"}, "id": 7, "colour": "red"}`}, lines[5:]...)...)
	start := time.Now()
	produceLines(t, lines, 6, "shop.Order", "--brokers", env.Broker.Addr, "--registry", env.RegistryURL, "--topic", "orders",
		"--schema", file, "--audit-wal", filepath.Join(dir, "wal"))

	des, err := schema.NewDeserializer(env.Registry, schema.DeserializerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := env.Registry.SchemaByVersion(t.Context(), "orders-value", -1)
	if err != nil || ss.Type.String() != "PROTOBUF" {
		t.Fatalf("orders-value: %+v %v, want a PROTOBUF schema", ss, err)
	}
	for i, r := range consumeAll(t, env.Broker.Addr, "orders", n) {
		id, body, err := schema.DecodeEnvelope(r.Value)
		if err != nil || id != ss.ID || !bytes.HasPrefix(body, []byte{2, 2}) {
			t.Fatalf("record %d: id %d (want %d), body % x: want message indexes [1] (02 02): %v", i, id, ss.ID, body[:min(len(body), 4)], err)
		}
		v, err := des.Deserialize(t.Context(), r.Value)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		got := v.(map[string]any)
		h := got["header"].(map[string]any)["shop.Header"].(map[string]any)
		if h["time"] != w.Add(time.Duration(i)*time.Second).UnixMilli() || h["server"] != "fe-1" || h["service"] != "tributary-produce" || len(h["guid"].([]byte)) != 16 {
			t.Errorf("record %d header %v: want the line's time, server fe-1, service tributary-produce, a guid", i, h)
		}
		var weight any
		if i%2 == 0 {
			weight = map[string]any{"double": 1.5}
		}
		want := map[string]any{
			"id":     fmt.Sprintf("o-%d", i),
			"lines":  []any{map[string]any{"sku": "a", "qty": int32(i)}},
			"state":  "PAID",
			"placed": map[string]any{"long.timestamp-micros": time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)},
			"weight": weight,
		}
		if p, ok := got["placed"].(map[string]any); ok {
			if tm, ok := p["long.timestamp-micros"].(time.Time); ok {
				p["long.timestamp-micros"] = tm.UTC()
			}
		}
		for k, wv := range want {
			if !reflect.DeepEqual(got[k], wv) {
				t.Errorf("record %d %s = %#v, want %#v", i, k, got[k], wv)
			}
		}
	}
	// Confluent's ProtobufDeserializer finds shop.Order at the records'
	// message indexes and reads each as sent.
	for i, r := range confluentRead(t, env, "orders", "proto", n) {
		h, _ := r["header"].(map[string]any)
		if g, err := base64.StdEncoding.DecodeString(fmt.Sprint(h["guid"])); err != nil || len(g) != 16 {
			t.Errorf("record %d: guid %v, want 16 bytes", i, h["guid"])
		}
		delete(h, "guid")
		line := `{"sku": "a"}`
		if i > 0 {
			line = fmt.Sprintf(`{"sku": "a", "qty": %d}`, i) // proto3 leaves a zero out
		}
		weight := ""
		if i%2 == 0 {
			weight = `, "weight": 1.5`
		}
		sameJSON(t, fmt.Sprintf("record %d", i), r, fmt.Sprintf(`{"header": {"time": "%d", "server": "fe-1", "service": "tributary-produce"}, "id": "o-%d", "lines": [%s], "state": "PAID", "placed": "2026-01-02T03:04:05.000006Z"%s}`,
			w.Add(time.Duration(i)*time.Second).UnixMilli(), i, line, weight))
	}
	checkAudited(t, env, "orders", w, n, start)

	// A file that imports its header: refused naming the import without
	// --reference, registered with a reference to it with one.
	evFile, hdrFile := filepath.Join(dir, "ev.proto"), filepath.Join(dir, "header.proto")
	for f, text := range map[string]string{
		evFile:  `syntax = "proto3"; package shop; import "shop/header.proto"; message Ev { shop.Header header = 1; string id = 2; }`,
		hdrFile: `syntax = "proto3"; package shop; message Header { int64 time = 1; string server = 2; }`,
	} {
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ev := fmt.Sprintf(`{"header": {"time": "%d"}, "id": "e"}`, w.UnixMilli()) + "\n"
	refArgs := []string{"produce", "--brokers", env.Broker.Addr, "--registry", env.RegistryURL, "--topic", "evs", "--schema", evFile, "--server", "fe-1"}
	if _, stderr, code := tributary(t, ev, refArgs...); code == 0 || !strings.Contains(stderr, `import "shop/header.proto"`) || !strings.Contains(stderr, "--reference") {
		t.Errorf("an import without --reference: exit %d, want the import named and --reference suggested\n%s", code, stderr)
	}
	if _, stderr, code := tributary(t, ev, append(refArgs, "--reference", "shop/header.proto="+hdrFile)...); code != 0 {
		t.Fatalf("with --reference: exit %d\n%s", code, stderr)
	}
	evs, err := env.Registry.SchemaByVersion(t.Context(), "evs-value", -1)
	if err != nil || len(evs.References) != 1 || evs.References[0].Subject != "shop/header.proto" {
		t.Fatalf("evs-value: %+v %v, want a reference to subject shop/header.proto", evs, err)
	}
	v, err := des.Deserialize(t.Context(), consumeAll(t, env.Broker.Addr, "evs", 1)[0].Value)
	if got := fmt.Sprint(v); err != nil || got != fmt.Sprintf("map[header:map[shop.Header:map[server:fe-1 time:%d]] id:e]", w.UnixMilli()) {
		t.Errorf("evs record reads back as %s: %v", got, err)
	}

	// A message the file does not define is refused before anything is sent.
	_, stderr, code := tributary(t, lines[0]+"\n", "produce", "--brokers", env.Broker.Addr, "--registry", env.RegistryURL, "--topic", "orders",
		"--schema", file, "--message", "shop.Nope")
	if code == 0 || !strings.Contains(stderr, "defines no message shop.Nope") || !strings.Contains(stderr, "shop.Order.Line") {
		t.Errorf("--message shop.Nope: exit %d, want the messages there are named\n%s", code, stderr)
	}
}

// orderJSONSchema keeps no other properties than it names, its header
// among them with server and service for the producer to fill.
const orderJSONSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "Order",
  "type": "object",
  "additionalProperties": false,
  "required": ["header", "id", "qty"],
  "properties": {
    "header": {"type": "object", "additionalProperties": false, "required": ["time"],
      "properties": {"time": {"type": "integer"}, "server": {"type": "string"}, "service": {"type": "string"}}},
    "id": {"type": "string"},
    "qty": {"type": "integer", "minimum": 1},
    "tags": {"type": "array", "items": {"type": "string"}}
  }
}`

// `tributary produce --schema order.json --schema-type JSON`: each line is
// validated against the schema and sent in Confluent's JSON envelope, the
// header's server and service filled in; a line the schema refuses is
// skipped with its line number and reason while the others go through.
// Each record reads back field by field, and the producer's and the
// broker's counts are the records sent.
func TestProduceJSONSchemaEvents(t *testing.T) {
	env := audittest.Start(t)
	createTopic(t, env.Broker.Addr, "orders-js", 1)
	file := filepath.Join(t.TempDir(), "order.json")
	if err := os.WriteFile(file, []byte(orderJSONSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	w := pastWindows(1)[0]
	const n = 20
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"header": {"time": %d}, "id": "o-%d", "qty": %d, "tags": ["t%d"]}`,
			w.Add(time.Duration(i)*time.Second).UnixMilli(), i, i+1, i))
	}
	lines = append(lines[:2], append([]string{`{"header": {"time": 1}, "id": "o-x", "qty": 0}`}, lines[2:]...)...)
	start := time.Now()
	produceLines(t, lines, 3, "minimum", "--brokers", env.Broker.Addr, "--registry", env.RegistryURL, "--topic", "orders-js",
		"--schema", file, "--schema-type", "JSON")

	ss, err := env.Registry.SchemaByVersion(t.Context(), "orders-js-value", -1)
	if err != nil || ss.Type.String() != "JSON" {
		t.Fatalf("orders-js-value: %+v %v, want a JSON schema", ss, err)
	}
	des, err := schema.NewDeserializer(env.Registry, schema.DeserializerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range consumeAll(t, env.Broker.Addr, "orders-js", n) {
		id, body, err := schema.DecodeEnvelope(r.Value)
		if err != nil || id != ss.ID || body[0] != '{' {
			t.Fatalf("record %d: id %d (want %d), body %q: want the JSON text: %v", i, id, ss.ID, body, err)
		}
		v, err := des.Deserialize(t.Context(), r.Value)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		got := fmt.Sprint(v)
		want := fmt.Sprint(map[string]any{
			"header": map[string]any{"time": w.Add(time.Duration(i) * time.Second).UnixMilli(), "server": map[string]any{"string": "fe-1"}, "service": map[string]any{"string": "tributary-produce"}},
			"id":     fmt.Sprintf("o-%d", i), "qty": int64(i + 1), "tags": map[string]any{"array": []any{fmt.Sprintf("t%d", i)}},
		})
		if got != want {
			t.Errorf("record %d = %s, want %s", i, got, want)
		}
	}
	for i, r := range confluentRead(t, env, "orders-js", "json", n) {
		sameJSON(t, fmt.Sprintf("record %d", i), r, fmt.Sprintf(`{"header": {"time": %d, "server": "fe-1", "service": "tributary-produce"}, "id": "o-%d", "qty": %d, "tags": ["t%d"]}`,
			w.Add(time.Duration(i)*time.Second).UnixMilli(), i, i+1, i))
	}
	checkAudited(t, env, "orders-js", w, n, start)
}
