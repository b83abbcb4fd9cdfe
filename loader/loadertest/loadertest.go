// Package loadertest gives loader and jobs tests their world in a few
// lines: a broker and a schema registry on it, page view events spread
// over hours and partitions, and an independent reader of what ended up in
// a warehouse (goavro's OCF reader, not the loader's writer).
package loadertest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader/warehouse"
	"github.com/tributary-io/tributary/schema"
	"github.com/tributary-io/tributary/schema/registry"
)

// Env is a broker with a schema registry on it.
type Env struct {
	Broker      *testenv.Broker
	Brokers     []string
	RegistryURL string
	Registry    *sr.Client
	Admin       *kadm.Client
	client      *kgo.Client
}

// Start runs a broker (in this process) and a registry node whose state is
// the broker's _schemas topic, both stopped at the end of the test. Under
// -short (make test-short: no services) it skips the test.
func Start(t testing.TB, opts ...testenv.BrokerOption) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a broker and a schema registry; skipped with -short")
	}
	b := testenv.StartBroker(t, opts...)
	return StartOn(t, b)
}

// StartOn runs a registry against an already started broker.
func StartOn(t testing.TB, b *testenv.Broker) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := registry.New(ctx, registry.Config{Bootstrap: []string{b.Addr}, Logger: quiet})
	if err != nil {
		t.Fatalf("starting the schema registry: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	url := "http://" + ln.Addr().String()
	reg, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		hs.Close()
		srv.Close()
	})
	return &Env{Broker: b, Brokers: []string{b.Addr}, RegistryURL: url, Registry: reg, Admin: kadm.NewClient(cl), client: cl}
}

// CreateTopic creates a topic with partitions and Kafka topic configs
// (name=value pairs).
func (e *Env) CreateTopic(t testing.TB, topic string, partitions int32, configs ...string) {
	t.Helper()
	cfg := map[string]*string{}
	for _, kv := range configs {
		k, v, _ := strings.Cut(kv, "=")
		cfg[k] = &v
	}
	if _, err := e.Admin.CreateTopic(context.Background(), partitions, 1, cfg, topic); err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
}

// Schema reads testdata/schemas/<name>.avsc.
func Schema(t testing.TB, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "testdata", "schemas", name+".avsc"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Event is an event in goavro's native form, with where it goes.
type Event struct {
	Partition int32
	Value     map[string]any
}

// GUID is the event's header guid, its identity in a warehouse.
func GUID(v map[string]any) string {
	h := v["header"].(map[string]any)
	return fmt.Sprintf("%x", h["guid"])
}

// PageViews returns n page view events (schema pageview.avsc) numbered
// from first, with header times spread evenly over [from, from+span) and
// partition i mod partitions. Each has a distinct guid.
func PageViews(first, n int, partitions int32, from time.Time, span time.Duration) []Event {
	out := make([]Event, n)
	for i := range n {
		k := first + i
		at := from.Add(time.Duration(int64(span) / int64(n) * int64(i))).Truncate(time.Millisecond).UTC()
		sum := sha256.Sum256([]byte(strconv.Itoa(k)))
		var ref any
		if k%3 == 0 {
			ref = map[string]any{"string": "https://example.com/" + strconv.Itoa(k%97)}
		}
		out[i] = Event{Partition: int32(k % int(partitions)), Value: map[string]any{
			"header": map[string]any{
				"time":    at,
				"server":  "web-" + strconv.Itoa(k%7),
				"service": "frontend",
				"guid":    sum[:16],
			},
			"memberId":   int64(k * 31),
			"pageKey":    "page-" + strconv.Itoa(k%13),
			"referrer":   ref,
			"userAgent":  nil,
			"locale":     "en_US",
			"durationMs": int32(k % 1000),
		}}
	}
	return out
}

// Produce serializes events with schemaText (registering it under the
// topic's subject) and produces them, acknowledged, in order.
func (e *Env) Produce(t testing.TB, topic, schemaText string, events []Event) {
	t.Helper()
	ser, err := schema.NewSerializer(e.Registry, schema.SerializerConfig{Schema: schemaText, Service: "frontend", Server: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recs := make([]*kgo.Record, 0, 5000)
	flush := func() {
		if err := e.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing to %s: %v", topic, err)
		}
		recs = recs[:0]
	}
	for _, ev := range events {
		b, err := ser.Serialize(ctx, topic, ev.Value)
		if err != nil {
			t.Fatalf("serializing: %v", err)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Partition: ev.Partition, Value: b})
		if len(recs) == cap(recs) {
			flush()
		}
	}
	if len(recs) > 0 {
		flush()
	}
}

// ProduceRaw produces values as they are (to test undecodable records).
func (e *Env) ProduceRaw(t testing.TB, topic string, partition int32, values ...[]byte) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Value: v})
	}
	if err := e.client.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
}

// Offsets returns the log start and end of a partition.
func (e *Env) Offsets(t testing.TB, topic string, partition int32) (start, end int64) {
	t.Helper()
	ctx := context.Background()
	s, err := e.Admin.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	en, err := e.Admin.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	so, _ := s.Lookup(topic, partition)
	eo, _ := en.Lookup(topic, partition)
	return so.Offset, eo.Offset
}

// File is one Avro data file found in a warehouse, read independently.
type File struct {
	Path      string // relative to the warehouse root
	Topic     string
	HourDir   string // topic/YYYY/MM/DD/HH
	Partition int32
	First     int64
	Last      int64
	SchemaID  int
	Schema    string // the file's avro.schema
	Codec     string
	Records   []map[string]any
	Size      int64
}

// Contents is everything in a warehouse outside _tributary.
type Contents struct {
	Files   []File
	Markers []string // hour directories with _SUCCESS
	Errors  []ErrorLine
	Other   []string // anything else (a finished warehouse has nothing)
	State   []string // entries under _tributary/runs and _tributary/commits
}

// ErrorLine is one line of an _errors file.
type ErrorLine struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error"`
	Value     []byte `json:"value"`
}

// Read walks a warehouse and decodes every data file with goavro.
func Read(t testing.TB, w warehouse.FS) *Contents {
	t.Helper()
	c := &Contents{}
	var walk func(dir string)
	walk = func(dir string) {
		infos, err := w.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return
			}
			t.Fatalf("listing %s: %v", dir, err)
		}
		for _, fi := range infos {
			p := path.Join(dir, fi.Name())
			if dir == "" {
				p = fi.Name()
			}
			switch {
			case p == "_tributary":
				for _, sub := range []string{"_tributary/runs", "_tributary/commits"} {
					if infos, err := w.ReadDir(sub); err == nil {
						for _, fi := range infos {
							c.State = append(c.State, path.Join(sub, fi.Name()))
						}
					}
				}
			case fi.IsDir():
				walk(p)
			case fi.Name() == "_SUCCESS":
				c.Markers = append(c.Markers, dir)
			case strings.HasSuffix(p, ".avro"):
				c.Files = append(c.Files, readAvro(t, w, p))
			case strings.HasPrefix(p, "_errors/") && strings.HasSuffix(p, ".jsonl"):
				c.Errors = append(c.Errors, readErrors(t, w, p)...)
			default:
				c.Other = append(c.Other, p)
			}
		}
	}
	walk("")
	sort.Strings(c.Markers)
	return c
}

func readAvro(t testing.TB, w warehouse.FS, p string) File {
	t.Helper()
	r, err := w.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ocf, err := goavro.NewOCFReader(bufio.NewReader(r))
	if err != nil {
		t.Fatalf("%s is not an Avro object container file: %v", p, err)
	}
	f := File{Path: p, HourDir: path.Dir(p), Schema: string(ocf.MetaData()["avro.schema"]), Codec: ocf.CompressionName()}
	// topic.pP.FIRST-LAST.sID.avro
	name := strings.TrimSuffix(path.Base(p), ".avro")
	parts := strings.Split(name, ".")
	if len(parts) < 4 {
		t.Fatalf("file name %s does not carry topic, partition, offsets and schema", p)
	}
	n := len(parts)
	f.Topic = strings.Join(parts[:n-3], ".")
	pp, _ := strconv.Atoi(strings.TrimPrefix(parts[n-3], "p"))
	f.Partition = int32(pp)
	a, b, _ := strings.Cut(parts[n-2], "-")
	f.First, _ = strconv.ParseInt(a, 10, 64)
	f.Last, _ = strconv.ParseInt(b, 10, 64)
	f.SchemaID, _ = strconv.Atoi(strings.TrimPrefix(parts[n-1], "s"))
	for ocf.Scan() {
		v, err := ocf.Read()
		if err != nil {
			t.Fatalf("%s: reading a record: %v", p, err)
		}
		f.Records = append(f.Records, v.(map[string]any))
	}
	if err := ocf.Err(); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	if fi, err := w.Stat(p); err == nil {
		f.Size = fi.Size()
	}
	return f
}

func readErrors(t testing.TB, w warehouse.FS, p string) []ErrorLine {
	t.Helper()
	data, err := warehouse.ReadFile(w, p)
	if err != nil {
		t.Fatal(err)
	}
	var out []ErrorLine
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e ErrorLine
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, e)
	}
	return out
}

// Records returns every record of a topic in the warehouse.
func (c *Contents) Records(topic string) []map[string]any {
	var out []map[string]any
	for _, f := range c.Files {
		if f.Topic == topic {
			out = append(out, f.Records...)
		}
	}
	return out
}

// CheckExactlyOnce fails the test unless the warehouse holds every event
// of want for topic exactly once, equal field by field, in a file of the
// hour of its header time, and nothing else.
func CheckExactlyOnce(t testing.TB, c *Contents, topic string, want []Event) {
	t.Helper()
	byGUID := make(map[string]map[string]any, len(want))
	for _, ev := range want {
		byGUID[GUID(ev.Value)] = ev.Value
	}
	seen := make(map[string]int, len(want))
	var dups, unknown, wrong, misplaced int
	for _, f := range c.Files {
		if f.Topic != topic {
			continue
		}
		for _, rec := range f.Records {
			g := GUID(rec)
			exp, ok := byGUID[g]
			if !ok {
				unknown++
				continue
			}
			seen[g]++
			if seen[g] == 2 {
				dups++
			}
			if !reflect.DeepEqual(normalize(rec), normalize(exp)) {
				if wrong == 0 {
					t.Errorf("%s: record %s differs:\n got %v\nwant %v", f.Path, g, rec, exp)
				}
				wrong++
			}
			at := rec["header"].(map[string]any)["time"].(time.Time).UTC()
			if hd := fmt.Sprintf("%s/%s", topic, at.Format("2006/01/02/15")); hd != f.HourDir {
				misplaced++
			}
		}
	}
	missing := len(want) - len(seen)
	if dups+unknown+wrong+missing+misplaced > 0 {
		t.Fatalf("topic %s in the warehouse: %d of %d events missing, %d duplicated, %d unknown, %d different, %d in the wrong hour",
			topic, missing, len(want), dups, unknown, wrong, misplaced)
	}
}

// normalize makes goavro's and the test's native forms comparable
// (time.Time locations, int widths).
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case time.Time:
		return x.UnixMilli()
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}
