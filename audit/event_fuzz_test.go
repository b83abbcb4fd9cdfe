package audit_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/schema"
)

// oneSchema is a registry holding the monitoring schema as id 1.
type oneSchema struct{}

func (oneSchema) SchemaByID(context.Context, int) (sr.Schema, error) {
	return sr.Schema{Schema: audit.MonitoringSchema, Type: sr.TypeAvro}, nil
}

func (oneSchema) RegisterSchema(context.Context, string, sr.Schema, int, int) (int, error) {
	return 1, nil
}

func (oneSchema) LookupSchema(context.Context, string, sr.Schema) (sr.SubjectSchema, error) {
	return sr.SubjectSchema{ID: 1}, nil
}

// FuzzDecodeEvent: any record of the audit topic, as the reconciler reads
// it (envelope, body in the monitoring schema, conversion to an Event),
// decodes or is refused as malformed or not an event; it never panics,
// and never allocates far beyond its own size, whatever counts and
// lengths it claims (a few bytes must not make `audit serve` allocate
// gigabytes).
func FuzzDecodeEvent(f *testing.F) {
	codec, err := goavro.NewCodec(audit.MonitoringSchema)
	if err != nil {
		f.Fatal(err)
	}
	w := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	e := &audit.Event{Published: w.Add(11 * time.Minute), Host: "fe-1", Tier: audit.TierProducer, Publisher: "p", Sequence: 3,
		Window: w, Size: audit.DefaultWindow, Counts: []audit.Count{{Topic: "pageview", Server: "fe-1", N: 7}},
		NoTime: []audit.TopicCount{{Topic: "pageview", N: 1}}, Covers: []string{"pageview"},
		Previous: []audit.Prior{{Sequence: 2, Window: w.Add(-audit.DefaultWindow), Topics: []string{"pageview"}}}}
	good, err := codec.BinaryFromNative(schema.AppendEnvelope(nil, 1), audit.EventNative(e))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	// An array claiming 2^31-1 items in a few bytes.
	huge := append(good[:5:5], 0x02, 0, 0)               // header: time 1, server "", service ""
	huge = append(huge, make([]byte, 16)...)             // guid
	huge = append(huge, 0, 0, 0, 0x02, 0, 0, 0x02, 0x02) // tier … window_ms
	f.Add(append(huge, 0xfe, 0xff, 0xff, 0xff, 0x0f))    // counts: 2^31-1 items, none there
	f.Add([]byte("plain text"))
	des, err := schema.NewDeserializer(oneSchema{}, schema.DeserializerConfig{})
	if err != nil {
		f.Fatal(err)
	}
	if got, err := audit.DecodeEvent(context.Background(), des, good); err != nil || got.Sequence != 3 || len(got.Counts) != 1 {
		f.Fatalf("the seed event decodes to %+v, %v", got, err)
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := audit.DecodeEvent(context.Background(), des, value)
		runtime.ReadMemStats(&after)
		if err != nil && !audit.IsMalformed(err) && !errors.Is(err, audit.ErrNotEvent) {
			t.Fatalf("an error that is neither malformed nor 'not an event': %v", err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(1<<20+256*len(value)) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(value), grew)
		}
	})
}
