package loader_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
	"github.com/tributary-io/tributary/schema"
)

// foreignScripts holds the Python side of the Protobuf and JSON Schema
// end-to-end tests (events.py says what they produce).
var foreignScripts = filepath.Join("testdata", "foreign")

// produceForeign runs produce.py: Confluent's ProtobufSerializer or
// JSONSerializer produces events first..first+n-1 of schema version v to
// topic, and their plain forms are appended to out.
func produceForeign(t *testing.T, env *loadertest.Env, topic, format string, v, first, n int, base time.Time, out string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", filepath.Join(foreignScripts, "produce.py"), env.RegistryURL, env.Brokers[0], topic, format,
		fmt.Sprint(v), fmt.Sprint(first), fmt.Sprint(n), fmt.Sprint(base.UnixMilli()), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("produce.py %s %s v%d: %v\n%s", topic, format, v, err, b)
	}
}

// readBackForeign runs readback.py: a reader nobody here wrote (fastavro,
// pyarrow, pyiceberg) reads what the loader wrote and compares each record
// with its plain form, field by field.
func readBackForeign(t *testing.T, kind, path, expected string) {
	t.Helper()
	b, err := exec.Command("python3", filepath.Join(foreignScripts, "readback.py"), kind, path, expected).CombinedOutput()
	if err != nil {
		t.Errorf("%s read back of %s: %v\n%s", kind, path, err, b)
		return
	}
	t.Logf("%s", strings.TrimSpace(string(b)))
}

// errorReasons lists the records of a warehouse's _errors files as
// "topic@offset: reason" lines.
func errorReasons(t *testing.T, root string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, warehouse.ErrorsDir, "*", "*", "*", "*", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no _errors files under %s (%v)", root, err)
	}
	var lines []string
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e loadertest.ErrorLine
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			lines = append(lines, fmt.Sprintf("%s@%d: %s", e.Topic, e.Offset, e.Error))
		}
	}
	return strings.Join(lines, "\n")
}

// A Protobuf topic and a JSON Schema topic, produced by Confluent's
// Python serializers in two schema versions (the second adds a field),
// load into Avro files, Parquet files and an Iceberg table in two runs
// (the second version registered between them); fastavro, pyarrow and
// pyiceberg read back every record with every field as produced, the
// added field a new column (null for the first version's records). Hostile records (a message index past the schema, a cut
// Protobuf body, JSON its schema refuses) go to _errors with the reason,
// and nothing else is lost.
func TestProtobufAndJSONTopicsLoad(t *testing.T) {
	testenv.Needs(t, testenv.Python)
	if exec.Command("python3", "-c", "import confluent_kafka.schema_registry.protobuf, fastavro, pyarrow.dataset, pyiceberg.table").Run() != nil {
		t.Fatal("Python's confluent-kafka, fastavro, pyarrow or pyiceberg is missing: run scripts/install-deps.sh (.ci/run does)")
	}
	env := loadertest.Start(t)
	env.CreateTopic(t, "orders-pb", 1)
	env.CreateTopic(t, "orders-js", 1)
	dir := t.TempDir()
	base := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	want := map[string]string{"orders-pb": filepath.Join(dir, "pb.jsonl"), "orders-js": filepath.Join(dir, "js.jsonl")}
	for topic, format := range map[string]string{"orders-pb": "proto", "orders-js": "json"} {
		produceForeign(t, env, topic, format, 1, 0, 30, base, want[topic])
	}

	// Hostile records, between the versions.
	ctx := context.Background()
	pb, err := env.Registry.SchemaByVersion(ctx, "orders-pb-value", 1)
	if err != nil {
		t.Fatal(err)
	}
	js, err := env.Registry.SchemaByVersion(ctx, "orders-js-value", 1)
	if err != nil {
		t.Fatal(err)
	}
	indexes := func(ix ...int) []byte {
		b := schema.AppendEnvelope(nil, pb.ID)
		b = binary.AppendVarint(b, int64(len(ix)))
		for _, i := range ix {
			b = binary.AppendVarint(b, int64(i))
		}
		return b
	}
	env.ProduceRaw(t, "orders-pb", 0,
		append(indexes(5), 0x12, 0x01, 'x'), // message index [5] of a file of 2 messages
		append(indexes(1), 0x12, 0x05, 'x'), // an Order whose id claims 5 bytes and has 1
	)
	env.ProduceRaw(t, "orders-js", 0, append(schema.AppendEnvelope(nil, js.ID), `{"id": 5, "state": "NEW"}`...))

	// A first load of each output, then version 2 (and more of version 1,
	// whose records the new table schema reads) and a second load: the
	// table schema, and an Iceberg table's, gains the added column.
	outputs := []string{loader.FormatAvro, loader.FormatParquet, "iceberg"}
	roots := map[string]string{}
	load := func(t *testing.T, out string) *loader.Summary {
		cfg := config(env, "file://"+roots[out], "orders-pb", "orders-js")
		cfg.MaxErrors = 10
		switch out {
		case loader.FormatParquet:
			cfg.Format = loader.FormatParquet
		case "iceberg":
			cfg.Table = "db"
		}
		return run(t, cfg)
	}
	for _, out := range outputs {
		roots[out] = t.TempDir()
		if sum := load(t, out); sum.Records != 60 || sum.Errors != 3 {
			t.Errorf("%s, first load: %d records, %d errors; want 60 and 3", out, sum.Records, sum.Errors)
		}
	}
	for topic, format := range map[string]string{"orders-pb": "proto", "orders-js": "json"} {
		produceForeign(t, env, topic, format, 2, 30, 10, base, want[topic])
		produceForeign(t, env, topic, format, 1, 40, 5, base, want[topic])
	}
	for _, out := range outputs {
		t.Run(out, func(t *testing.T) {
			root := roots[out]
			if sum := load(t, out); sum.Records != 30 || sum.Errors != 0 {
				t.Errorf("second load: %d records, %d errors; want 30 and 0", sum.Records, sum.Errors)
			}
			got := errorReasons(t, root)
			for _, w := range []string{
				"orders-pb@30: " + fmt.Sprintf("schema: record body does not match its writer schema: schema id %d: message index [5] points past the schema (the schema defines 2 messages)", pb.ID),
				"orders-pb@31: ", "not a ex.Order",
				"orders-js@30: ", "the JSON does not match its schema",
			} {
				if !strings.Contains(got, w) {
					t.Errorf("_errors lacks %q; it holds:\n%s", w, got)
				}
			}
			for topic, exp := range want {
				switch out {
				case "iceberg":
					readBackForeign(t, "iceberg", filepath.Join(root, "db", topic), exp)
				default:
					readBackForeign(t, out, filepath.Join(root, topic), exp)
				}
			}
		})
	}
}

// A Protobuf topic whose records are of two messages of one schema: the
// table holds the schema's root message (the event, not the header the
// file defines first). Parquet files keep the other message's records in
// files of their own; an Iceberg table refuses them to _errors, naming
// both messages, and loads the rest.
func TestProtobufRecordsOfAnotherMessage(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "two", 1)
	ctx := context.Background()
	ss, err := env.Registry.CreateSchema(ctx, "two-value", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3";
package ex;
message Header { int64 time = 1; string server = 2; }
message Event { Header header = 1; string id = 2; }`})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour).UnixMilli()
	header := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(at))
	event := func(id string) []byte {
		b := append(schema.AppendEnvelope(nil, ss.ID), 2, 2) // message index [1]
		b = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), header)
		return protowire.AppendString(protowire.AppendTag(b, 2, protowire.BytesType), id)
	}
	lone := append(append(schema.AppendEnvelope(nil, ss.ID), 0), header...) // index [0]: a Header
	env.ProduceRaw(t, "two", 0, event("a"), event("b"), lone, event("c"))

	t.Run("parquet", func(t *testing.T) {
		root := t.TempDir()
		cfg := config(env, "file://"+root, "two")
		cfg.Format = loader.FormatParquet
		if sum := run(t, cfg); sum.Records != 4 || sum.Errors != 0 {
			t.Fatalf("%d records, %d errors; want 4 and 0", sum.Records, sum.Errors)
		}
		files, _ := filepath.Glob(filepath.Join(root, "two", "*", "*", "*.parquet"))
		if len(files) != 2 {
			t.Fatalf("files %v, want one of ex.Event (3 records) and one of ex.Header (1)", files)
		}
	})
	t.Run("iceberg", func(t *testing.T) {
		root := t.TempDir()
		cfg := config(env, "file://"+root, "two")
		cfg.Table, cfg.MaxErrors = "db", 10
		if sum := run(t, cfg); sum.Records != 3 || sum.Errors != 1 {
			t.Fatalf("%d records, %d errors; want 3 and 1", sum.Records, sum.Errors)
		}
		want := fmt.Sprintf("two@2: schema: writer schema cannot be read as Avro: topic two: the record is a ex.Header; the table holds ex.Event (the root message of schema id %d, the latest of subject two-value)", ss.ID)
		if got := errorReasons(t, root); got != want {
			t.Errorf("_errors:\n%s\nwant\n%s", got, want)
		}
	})
}

// A Protobuf message that holds itself (a tree) loads into Parquet files
// and an Iceberg table, which cannot nest it: the nested nodes are JSON
// text (a record holding itself would fail every run).
func TestRecursiveProtobufLoadsIntoTables(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "trees", 1)
	ss, err := env.Registry.CreateSchema(context.Background(), "trees-value", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3";
message Header { int64 time = 1; }
message Node { string name = 1; repeated Node kids = 2; }
message Tree { Header header = 1; Node root = 2; }`})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour).UnixMilli()
	node := func(name string, kids ...[]byte) []byte {
		b := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), name)
		for _, k := range kids {
			b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), k)
		}
		return b
	}
	v := append(schema.AppendEnvelope(nil, ss.ID), 2, 4) // message index [2]: Tree
	v = protowire.AppendBytes(protowire.AppendTag(v, 1, protowire.BytesType), protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(at)))
	v = protowire.AppendBytes(protowire.AppendTag(v, 2, protowire.BytesType), node("a", node("b", node("c"))))
	env.ProduceRaw(t, "trees", 0, v)
	for _, table := range []string{"", "db"} {
		cfg := config(env, "file://"+t.TempDir(), "trees")
		cfg.Format, cfg.Table = loader.FormatParquet, table
		if sum := run(t, cfg); sum.Records != 1 || sum.Errors != 0 {
			t.Errorf("table %q: %d records, %d errors; want 1 and 0", table, sum.Records, sum.Errors)
		}
	}
}

// When the latest schema of a Protobuf topic's subject has no Avro form
// (here its only message is a well-known type's, which is no record), a
// Parquet load keeps each writer schema, as for a topic without a
// subject, instead of failing every run; the records of that schema go
// to _errors with the reason.
func TestProtobufLatestSchemaWithoutAvroForm(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "odd", 1)
	ctx := context.Background()
	for _, r := range env.Registry.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "odd-value") {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	v1, err := env.Registry.CreateSchema(ctx, "odd-value", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3"; message Ev { int64 n = 1; }`})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := env.Registry.CreateSchema(ctx, "odd-value", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3"; package google.protobuf; message Value { int64 n = 1; }`})
	if err != nil {
		t.Fatal(err)
	}
	env.ProduceRaw(t, "odd", 0,
		append(schema.AppendEnvelope(nil, v1.ID), 0, 0x08, 0x07),
		append(schema.AppendEnvelope(nil, v2.ID), 0, 0x08, 0x07))
	root := t.TempDir()
	cfg := config(env, "file://"+root, "odd")
	cfg.Format, cfg.MaxErrors = loader.FormatParquet, 10
	if sum := run(t, cfg); sum.Records != 1 || sum.Errors != 1 {
		t.Errorf("%d records, %d errors; want 1 and 1", sum.Records, sum.Errors)
	}
	if got := errorReasons(t, root); !strings.Contains(got, "odd@1: ") || !strings.Contains(got, "google.protobuf.Value is a well-known type, not a record") {
		t.Errorf("_errors: %s", got)
	}
}
