package mirror_test

import (
	"github.com/prometheus/client_golang/prometheus"

	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
	"github.com/tributary-io/tributary/schema"
	"github.com/tributary-io/tributary/schema/registry"
)

// startRegistry runs a schema registry node over an in-memory log.
func startRegistry(t *testing.T) (*sr.Client, string) {
	t.Helper()
	needServices(t)
	srv, err := registry.NewWithLog(context.Background(), registry.NewMemoryLog().Open(), registry.Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	cl, err := sr.NewClient(sr.URLs(hs.URL))
	if err != nil {
		t.Fatal(err)
	}
	return cl, hs.URL
}

func readSchema(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../testdata/schemas/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A source datacenter with its own registry: the mirror rewrites every
// envelope's schema id to the target registry's id for the same schema, so
// events decode in the analysis datacenter with its registry.
func TestMirrorRewritesSchemaIDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srcReg, srcURL := startRegistry(t)
	dstReg, dstURL := startRegistry(t)
	// Occupy the target's first ids so that the same schema gets another
	// id there than in the source.
	for i := range 2 {
		s := fmt.Sprintf(`{"type":"record","name":"Other%d","fields":[{"name":"x","type":"long"}]}`, i)
		if _, err := dstReg.CreateSchema(ctx, fmt.Sprintf("other%d-value", i), sr.Schema{Schema: s}); err != nil {
			t.Fatal(err)
		}
	}

	d := startDC(t, "dc1", 1)
	target := testenv.StartBroker(t)
	createTopic(t, d.addrs(), "pageviews", 3)
	ser, err := schema.NewSerializer(srcReg, schema.SerializerConfig{Schema: readSchema(t, "pageview.avsc"), Service: "frontend"})
	if err != nil {
		t.Fatal(err)
	}
	srcDe, _ := schema.NewDeserializer(srcReg, schema.DeserializerConfig{})
	dstDe, _ := schema.NewDeserializer(dstReg, schema.DeserializerConfig{})
	cl := newClient(t, d.addrs())
	var want []any
	for i := range 300 {
		v, err := ser.Serialize(ctx, "pageviews", map[string]any{
			"memberId": int64(i), "pageKey": fmt.Sprintf("page-%d", i%7), "locale": "en_US", "durationMs": int32(i),
			"referrer": nil, "userAgent": nil,
		})
		if err != nil {
			t.Fatal(err)
		}
		native, err := srcDe.Deserialize(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, native)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "pageviews", Partition: 0, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A value that is not an envelope passes unchanged.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "pageviews", Value: []byte("plain text")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	src := d.source()
	src.Registry = srcURL
	m, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{src}, Target: []string{target.Addr}, TargetRegistry: dstURL, Topics: "^pageviews$"})
	waitForCount(t, []string{target.Addr}, "pageviews", 301, time.Minute)
	// Every envelope's id was translated; every record's acknowledgement was
	// timed, the plain one's too.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Metrics())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var translated float64
	var acked uint64
	for _, f := range fams {
		for _, mm := range f.GetMetric() {
			switch f.GetName() {
			case "tributary_mirror_schema_ids_translated_total":
				translated += mm.GetCounter().GetValue()
			case "tributary_mirror_ack_latency_seconds":
				acked += mm.GetHistogram().GetSampleCount()
			}
		}
	}
	if translated != 300 || acked != 301 {
		t.Errorf("metrics: %v schema ids translated and %d acknowledgements timed, want 300 and 301", translated, acked)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var got []any
	plain := 0
	for _, recs := range readTopic(t, []string{target.Addr}, "pageviews") {
		for _, r := range recs {
			if string(r.Value) == "plain text" {
				plain++
				continue
			}
			id, _, err := schema.DecodeEnvelope(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			if id <= 2 {
				t.Fatalf("target record carries id %d, one of the target registry's other schemas: not rewritten", id)
			}
			native, err := dstDe.Deserialize(ctx, r.Value)
			if err != nil {
				t.Fatalf("decoding with the target registry: %v", err)
			}
			got = append(got, native)
		}
	}
	if plain != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("target decodes to %d events (+%d plain), want the %d produced, equal", len(got), plain, len(want))
	}
}

// An envelope whose id the source registry does not know: by default its
// partition stops there, says where, and the other partitions go on; with
// CopyUnknown it is copied and counted.
func TestMirrorUnknownSchemaID(t *testing.T) {
	_, srcURL := startRegistry(t)
	_, dstURL := startRegistry(t)
	d := startDC(t, "dc1", 1)
	createTopic(t, d.addrs(), "broken", 2)
	cl := newClient(t, d.addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()
	for _, v := range [][]byte{[]byte("not an envelope"), schema.AppendEnvelope(nil, 999), []byte("after")} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "broken", Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	src := d.source()
	src.Registry = srcURL

	t.Run("stop", func(t *testing.T) {
		target := testenv.StartBroker(t)
		m, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{src}, Target: []string{target.Addr}, TargetRegistry: dstURL,
			Group: "stop"})
		// Partition 1 flows while partition 0 is stopped at its poison record.
		for i := range 20 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "broken", Partition: 1, Value: fmt.Appendf(nil, "ok %d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		testenv.Eventuallyf(t, time.Minute, func() (bool, string) {
			st := m.Status()
			if len(st.Sources) == 0 || len(st.Sources[0].Partitions) != 2 {
				return false, fmt.Sprintf("%+v", st)
			}
			p0, p1 := st.Sources[0].Partitions[0], st.Sources[0].Partitions[1]
			return strings.Contains(p0.Stopped, "broken/0 offset 1") && strings.Contains(p0.Stopped, "schema id 999") && p1.Safe == 20,
				fmt.Sprintf("partition 0 stopped %q, partition 1 safe at %d", p0.Stopped, p1.Safe)
		})
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		got := readTopic(t, []string{target.Addr}, "broken")
		if len(got[0]) != 1 || len(got[1]) != 20 {
			t.Fatalf("target holds %d records in partition 0 (want 1: the one before the poison) and %d in partition 1 (want 20)", len(got[0]), len(got[1]))
		}
	})

	t.Run("copy", func(t *testing.T) {
		target := testenv.StartBroker(t)
		m, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{src}, Target: []string{target.Addr}, TargetRegistry: dstURL,
			Group: "copy", UnknownSchemas: mirror.CopyUnknown})
		waitForCount(t, []string{target.Addr}, "broken", 3, time.Minute)
		if n := m.Status().Sources[0].Partitions[0].UnknownSchemas; n != 1 {
			t.Fatalf("status counts %d unknown schema ids, want 1", n)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		recs := readTopic(t, []string{target.Addr}, "broken")[0]
		if len(recs) != 3 || string(recs[1].Value) != string(schema.AppendEnvelope(nil, 999)) {
			t.Fatalf("target holds %d records; the unknown one must be copied unchanged", len(recs))
		}
	})
}

// Envelopes and no target registry: copied as they are, their ids would
// name other schemas in the analysis datacenter. The mirror refuses before
// copying anything, naming the flags that fix it.
func TestMirrorRefusesEnvelopesWithoutTargetRegistry(t *testing.T) {
	needServices(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	createTopic(t, []string{src.Addr}, "pageviews", 2)
	cl := newClient(t, []string{src.Addr})
	for i := range 10 {
		v := schema.AppendEnvelope(nil, 1)
		v = fmt.Appendf(v, "body %d", i)
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "pageviews", Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	m, err := mirror.New(mirror.Config{Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{src.Addr}}}, Target: []string{dst.Addr}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = m.Run(ctx)
	for _, want := range []string{"schema id 1", "--target-registry", "--source-registry dc1=URL", "--keep-schema-ids"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Run: %v; want an error naming %q", err, want)
		}
	}
	if n := total(t, dst.Addr, "pageviews"); n != 0 {
		t.Fatalf("the target holds %d records; nothing may be copied", n)
	}

	// --keep-schema-ids: the datacenters share a registry; ids are kept.
	_, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{src.Addr}}}, Target: []string{dst.Addr}, KeepSchemaIDs: true})
	waitForCount(t, []string{dst.Addr}, "pageviews", 10, time.Minute)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
