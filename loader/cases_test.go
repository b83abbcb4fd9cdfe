package loader_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/schema"
)

// Events written with two versions of a schema land in separate files,
// each readable with the schema it carries.
func TestSchemaEvolution(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "evolving", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	v1a := loadertest.PageViews(0, 300, 2, from, time.Hour)
	v2 := toV2(loadertest.PageViews(300, 300, 2, from.Add(30*time.Minute), time.Hour))
	v1b := loadertest.PageViews(600, 300, 2, from.Add(time.Hour), time.Hour)
	env.Produce(t, "evolving", loadertest.Schema(t, "pageview"), v1a)
	env.Produce(t, "evolving", loadertest.Schema(t, "pageview-v2"), v2)
	env.Produce(t, "evolving", loadertest.Schema(t, "pageview"), v1b)

	url := "file://" + t.TempDir()
	run(t, config(env, url, "evolving"))
	c := loadertest.Read(t, openWarehouse(t, url))
	all := slices.Concat(v1a, v2, v1b)
	loadertest.CheckExactlyOnce(t, c, "evolving", all)

	ids := map[int]bool{}
	for _, f := range c.Files {
		ids[f.SchemaID] = true
		_, hasSession := f.Records[0]["sessionId"]
		_, hasAgent := f.Records[0]["userAgent"]
		for _, r := range f.Records {
			if _, ok := r["sessionId"]; ok != hasSession {
				t.Fatalf("%s mixes records of two schemas", f.Path)
			}
		}
		if hasSession == hasAgent || !strings.Contains(f.Schema, "sessionId") != hasAgent {
			t.Errorf("%s: records do not match the file's schema", f.Path)
		}
	}
	if len(ids) != 2 {
		t.Errorf("files carry schema ids %v, want two", slices.Collect(maps.Keys(ids)))
	}
}

// toV2 turns page views into pageview-v2.avsc's shape.
func toV2(events []loadertest.Event) []loadertest.Event {
	for i, ev := range events {
		v := maps.Clone(ev.Value)
		delete(v, "userAgent")
		v["durationMs"] = int64(v["durationMs"].(int32))
		v["sessionId"] = map[string]any{"string": fmt.Sprintf("session-%d", i%17)}
		events[i].Value = v
	}
	return events
}

// Records that cannot be decoded go to _errors with their offsets and are
// counted; past the limit the run fails and commits nothing. A JSON
// record its schema refuses and a Protobuf record naming a message the
// schema does not have are among them, the reason named.
func TestUndecodableRecords(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "mixed", 1)
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	good := loadertest.PageViews(0, 20, 1, from, time.Hour)
	env.Produce(t, "mixed", loadertest.Schema(t, "pageview"), good[:10])
	ser, err := schema.NewSerializer(env.Registry, schema.SerializerConfig{Schema: loadertest.Schema(t, "pageview")})
	if err != nil {
		t.Fatal(err)
	}
	valid, err := ser.Serialize(context.Background(), "mixed", good[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	jsonID, err := env.Registry.CreateSchema(context.Background(), "mixed-json", sr.Schema{Schema: `{"type":"object","properties":{"a":{"type":"string"}}}`, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	protoID, err := env.Registry.CreateSchema(context.Background(), "mixed-proto", sr.Schema{Schema: `syntax = "proto3"; message M { string a = 1; }`, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}

	env.ProduceRaw(t, "mixed", 0,
		[]byte("plain text, not an envelope"), // offset 10: wrong magic
		schema.AppendEnvelope(nil, 99999),     // 11: unknown schema id
		valid[:len(valid)-5],                  // 12: body cut short
		[]byte{0, 0},                          // 13: envelope truncated
		append(valid, 0),                      // 14: a byte left over after the value
		append(schema.AppendEnvelope(nil, jsonID.ID), `{"a":1}`...),        // 15: JSON its schema refuses
		append(schema.AppendEnvelope(nil, protoID.ID), 2, 2, 0x0a, 1, 'x'), // 16: Protobuf message index [1] of 1 message
	)
	env.Produce(t, "mixed", loadertest.Schema(t, "pageview"), good[10:])

	t.Run("over the limit", func(t *testing.T) {
		url := "file://" + t.TempDir()
		cfg := config(env, url, "mixed")
		cfg.MaxErrors = 6
		sum, err := loader.Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "more than 6 records could not be decoded") {
			t.Fatalf("run with 7 bad records and a limit of 6: %v", err)
		}
		if sum.Committed {
			t.Fatal("the failed run committed")
		}
		c := loadertest.Read(t, openWarehouse(t, url))
		if len(c.Files)+len(c.Errors)+len(c.State) > 0 {
			t.Fatalf("the failed run left %d files, %d error records, state %v", len(c.Files), len(c.Errors), c.State)
		}
	})
	t.Run("within the limit", func(t *testing.T) {
		url := "file://" + t.TempDir()
		cfg := config(env, url, "mixed")
		cfg.MaxErrors = 7
		sum := run(t, cfg)
		if sum.Errors != 7 || sum.Records != 20 {
			t.Fatalf("summary: %d errors, %d records; want 7 and 20", sum.Errors, sum.Records)
		}
		c := loadertest.Read(t, openWarehouse(t, url))
		loadertest.CheckExactlyOnce(t, c, "mixed", good)
		var offsets []int64
		for _, e := range c.Errors {
			offsets = append(offsets, e.Offset)
			if e.Topic != "mixed" || e.Error == "" || len(e.Value) == 0 {
				t.Errorf("error record %+v lacks topic, cause or value", e)
			}
		}
		if fmt.Sprint(offsets) != "[10 11 12 13 14 15 16]" {
			t.Errorf("error records at offsets %v, want [10 11 12 13 14 15 16]", offsets)
		}
		for i, want := range []error{schema.ErrWrongMagic, schema.ErrUnknownID, schema.ErrBadBody, schema.ErrTruncated, schema.ErrBadBody,
			fmt.Errorf("%w: schema id %d: the JSON does not match its schema", schema.ErrBadBody, jsonID.ID),
			fmt.Errorf("%w: schema id %d: message index [1] points past the schema (the schema defines 1 messages)", schema.ErrBadBody, protoID.ID)} {
			if i < len(c.Errors) && !strings.Contains(c.Errors[i].Error, strings.TrimPrefix(want.Error(), "schema: ")) {
				t.Errorf("offset %d: error %q, want %q", c.Errors[i].Offset, c.Errors[i].Error, want)
			}
		}
	})
}

// When retention deleted records before they were loaded, the run records
// the exact lost range and continues from the log start (or fails, if the
// job says so) — never silently.
func TestRetentionLoss(t *testing.T) {
	env := loadertest.Start(t, testenv.WithConfig(func(c *broker.Config) {
		c.Log.RetentionCheckInterval = 50 * time.Millisecond
	}))
	env.CreateTopic(t, "short", 1, "segment.bytes=1024", "retention.bytes=4096")
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	events := loadertest.PageViews(0, 110, 1, from, time.Hour)
	produceOneByOne := func(evs []loadertest.Event) {
		for i := range evs {
			env.Produce(t, "short", loadertest.Schema(t, "pageview"), evs[i:i+1])
		}
	}
	produceOneByOne(events[:10])
	url := "file://" + t.TempDir()
	cfg := config(env, url, "short")
	run(t, cfg)

	produceOneByOne(events[10:])
	testenv.Eventuallyf(t, 20*time.Second, func() (bool, string) {
		logStart, _ := env.Offsets(t, "short", 0)
		return logStart > 10, fmt.Sprintf("retention did not move the log start past 10 (it is %d)", logStart)
	})
	time.Sleep(200 * time.Millisecond) // let retention settle
	logStart, end := env.Offsets(t, "short", 0)
	t.Logf("log is now [%d, %d)", logStart, end)

	failing := cfg
	failing.OnDataLoss = loader.Fail
	want := fmt.Sprintf("short/0 offsets 10-%d", logStart-1)
	if _, err := loader.Run(context.Background(), failing); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("run with on data loss = fail: %v; want an error naming %s", err, want)
	}

	sum := run(t, cfg)
	if len(sum.Lost) != 1 || sum.Lost[0].From != 10 || sum.Lost[0].To != logStart-1 {
		t.Fatalf("lost %v, want exactly short/0 offsets 10-%d", sum.Lost, logStart-1)
	}
	if r := sum.Lost[0].Reason; !strings.Contains(r, "retention or DeleteRecords") {
		t.Errorf("lost range's reason %q, want one allowing for retention or DeleteRecords", r)
	}
	if sum.Records != end-logStart {
		t.Errorf("loaded %d records, want %d (the log start to the end)", sum.Records, end-logStart)
	}
	c := loadertest.Read(t, openWarehouse(t, url))
	loadertest.CheckExactlyOnce(t, c, "short", slices.Concat(events[:10], events[logStart:]))
}

// An hour is marked _SUCCESS once every partition has been loaded past its
// end plus the grace period, not before.
func TestSuccessMarkers(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "hours", 2)
	base := time.Date(2024, 3, 10, 10, 0, 0, 0, time.UTC)
	events := loadertest.PageViews(0, 500, 2, base, 150*time.Minute) // 10:00 to 12:30
	env.Produce(t, "hours", loadertest.Schema(t, "pageview"), events)

	url := "file://" + t.TempDir()
	w := openWarehouse(t, url)
	cfg := config(env, url, "hours")
	cfg.SuccessGrace = 10 * time.Minute
	at := func(hhmm string) func() time.Time {
		tm, _ := time.Parse("15:04", hhmm)
		return func() time.Time { return base.Add(tm.Sub(time.Date(0, 1, 1, 10, 0, 0, 0, time.UTC))) }
	}
	steps := []struct {
		now  string
		want string
	}{
		{"12:31", "[hours/2024/03/10/10 hours/2024/03/10/11]"},
		{"13:05", "[hours/2024/03/10/10 hours/2024/03/10/11]"}, // 12:00-13:00 + 10m not yet passed
		{"13:11", "[hours/2024/03/10/10 hours/2024/03/10/11 hours/2024/03/10/12]"},
	}
	for _, s := range steps {
		cfg.Now = at(s.now)
		run(t, cfg)
		if got := fmt.Sprint(loadertest.Read(t, w).Markers); got != s.want {
			t.Errorf("at %s: _SUCCESS in %s, want %s", s.now, got, s.want)
		}
	}
}

// Files roll by size as well as by record count.
func TestRollBySize(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "big", 1)
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	events := loadertest.PageViews(0, 3000, 1, from, time.Minute)
	env.Produce(t, "big", loadertest.Schema(t, "pageview"), events)
	url := "file://" + t.TempDir()
	cfg := config(env, url, "big")
	cfg.FileMaxBytes = 32 << 10
	cfg.Codec = "snappy"
	sum := run(t, cfg)
	c := loadertest.Read(t, openWarehouse(t, url))
	loadertest.CheckExactlyOnce(t, c, "big", events)
	if len(c.Files) < 3 || sum.Files != len(c.Files) {
		t.Fatalf("%d files (summary says %d), want several of at most 32 KiB", len(c.Files), sum.Files)
	}
	for _, f := range c.Files {
		if f.Size > cfg.FileMaxBytes+1024 {
			t.Errorf("%s is %d bytes, over the %d limit", f.Path, f.Size, cfg.FileMaxBytes)
		}
		if f.Codec != "snappy" {
			t.Errorf("%s: codec %s", f.Path, f.Codec)
		}
	}
}

// An unreachable warehouse, broker or registry fails the run with a clear
// message and commits nothing.
func TestUnreachable(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "data", 1)
	env.Produce(t, "data", loadertest.Schema(t, "pageview"), loadertest.PageViews(0, 10, 1, time.Now().Add(-2*time.Hour), time.Hour))
	dead := testenv.FreeAddr(t)
	cases := []struct {
		name string
		edit func(*loader.Config)
		want string
	}{
		{"warehouse", func(c *loader.Config) { c.Warehouse = "hdfs://" + dead + "/warehouse" }, "cannot reach the HDFS NameNode at " + dead},
		{"broker", func(c *loader.Config) { c.Brokers = []string{dead} }, "cannot reach the brokers at [" + dead + "]"},
		{"registry", func(c *loader.Config) { c.RegistryURL = "http://" + dead }, "fetch writer schema id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := "file://" + t.TempDir()
			cfg := config(env, url, "data")
			cfg.BrokerTimeout = 2 * time.Second
			tc.edit(&cfg)
			start := time.Now()
			sum, err := loader.Run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
			if sum.Committed {
				t.Fatal("committed")
			}
			c := loadertest.Read(t, openWarehouse(t, url))
			if len(c.Files)+len(c.State) > 0 {
				t.Fatalf("left %d files and state %v", len(c.Files), c.State)
			}
		})
	}
}

// Two runs of the same topic never overlap: the second is refused while the
// first holds the topic.
func TestOneRunPerTopic(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "busy", 1)
	env.Produce(t, "busy", loadertest.Schema(t, "pageview"), loadertest.PageViews(0, 100, 1, time.Now().Add(-2*time.Hour), time.Hour))
	url := "file://" + t.TempDir()
	cfg := config(env, url, "busy")
	inside := make(chan struct{})
	release := make(chan struct{})
	first := cfg
	first.Fault = func(p loader.FaultPoint) error {
		if p == loader.FaultBeforeCommit {
			close(inside)
			<-release
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { _, err := loader.Run(context.Background(), first); done <- err }()
	<-inside
	_, err := loader.Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), `lock "topic-busy" is held by tributary load run`) {
		t.Errorf("second run while the first holds the topic: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if sum := run(t, cfg); sum.Records != 0 {
		t.Errorf("the run after loaded %d records again", sum.Records)
	}
}

// Records of an Avro schema that uses another subject's type (a schema
// reference) are loaded, in a file whose schema is the writer schema made
// self-contained: the file reads without the registry.
func TestSchemaReferences(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "people", 1)
	ctx := context.Background()
	if _, err := env.Registry.CreateSchema(ctx, "addr", sr.Schema{Schema: `{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"}]}`}); err != nil {
		t.Fatal(err)
	}
	person, err := env.Registry.CreateSchema(ctx, "people-value", sr.Schema{Schema: `{"type":"record","name":"Person","fields":[{"name":"home","type":"Addr"}]}`,
		References: []sr.SchemaReference{{Name: "Addr", Subject: "addr", Version: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	env.ProduceRaw(t, "people", 0,
		append(schema.AppendEnvelope(nil, person.ID), 2, 'x'),
		append(schema.AppendEnvelope(nil, person.ID), 4, 'y', 'z'),
	)
	url := "file://" + t.TempDir()
	sum := run(t, config(env, url, "people"))
	if sum.Errors != 0 || sum.Records != 2 {
		t.Fatalf("summary: %d errors, %d records; want 0 and 2", sum.Errors, sum.Records)
	}
	c := loadertest.Read(t, openWarehouse(t, url))
	if len(c.Files) != 1 || len(c.Files[0].Records) != 2 {
		t.Fatalf("files: %+v", c.Files)
	}
	f := c.Files[0]
	if !strings.Contains(f.Schema, `"city"`) {
		t.Errorf("the file's schema lacks the referenced type: %s", f.Schema)
	}
	if got := fmt.Sprint(f.Records); got != "[map[home:map[city:x]] map[home:map[city:yz]]]" {
		t.Errorf("records %s", got)
	}
}
