package audit_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema"
)

// A schema whose header is not its first field, and one without a header.
const (
	headerLast = `{"type":"record","name":"Late","namespace":"tributary.test","fields":[
		{"name":"n","type":"long"},
		{"name":"header","type":{"type":"record","name":"Header","namespace":"tributary.events","fields":[
			{"name":"time","type":{"type":"long","logicalType":"timestamp-millis"}},
			{"name":"server","type":"string"},
			{"name":"service","type":"string"},
			{"name":"guid","type":{"type":"fixed","name":"GUID","size":16}}]}}]}`
	noHeader = `{"type":"record","name":"Bare","namespace":"tributary.test","fields":[{"name":"n","type":"long"}]}`
)

func serializer(t *testing.T, env *audittest.Env, text string) *schema.Serializer {
	t.Helper()
	s, err := schema.NewSerializer(env.Registry, schema.SerializerConfig{Schema: text, Server: "fe-9", Service: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The header is read wherever it is in the record; without one, or with
// a zero time, the event has no time; a value that is not an envelope, an
// unknown schema id or a body cut short is malformed.
func TestHeaderReader(t *testing.T) {
	env := audittest.Start(t)
	ctx := context.Background()
	pv, err := os.ReadFile(pageviewSchema)
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2024, 5, 1, 10, 3, 0, 0, time.UTC)
	first, err := serializer(t, env, string(pv)).Serialize(ctx, "pageview", map[string]any{
		"header": map[string]any{"time": when}, "memberId": int64(1), "pageKey": "home"})
	if err != nil {
		t.Fatal(err)
	}
	last, err := serializer(t, env, headerLast).Serialize(ctx, "late", map[string]any{"n": int64(1), "header": map[string]any{"time": when}})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := serializer(t, env, noHeader).Serialize(ctx, "bare", map[string]any{"n": int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	unknown := schema.AppendEnvelope(nil, 999999)
	for _, strict := range []bool{false, true} {
		hr, err := audit.NewHeaderReader(env.Registry, audit.HeaderReaderConfig{Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string][]byte{"header first": first, "header last": last} {
			got, server, err := hr.Read(ctx, v)
			if err != nil || !got.Equal(when) || server != "fe-9" {
				t.Errorf("strict=%v %s: %v %q %v, want %v fe-9", strict, name, got, server, err, when)
			}
		}
		if _, _, err := hr.Read(ctx, bare); !errors.Is(err, audit.ErrNoTime) {
			t.Errorf("strict=%v no header: %v, want ErrNoTime", strict, err)
		}
		for name, v := range map[string][]byte{"plain text": []byte("hello"), "unknown id": append(unknown, 2), "short": {0, 0}} {
			if _, _, err := hr.Read(ctx, v); !audit.IsMalformed(err) {
				t.Errorf("strict=%v %s: %v, want malformed", strict, name, err)
			}
		}
	}
	// Only a strict reader decodes past the header: a body cut short
	// after it is malformed to a tier, not to a producer that just wrote it.
	cut := first[:len(first)-3]
	strict, _ := audit.NewHeaderReader(env.Registry, audit.HeaderReaderConfig{Strict: true})
	if _, _, err := strict.Read(ctx, cut); !audit.IsMalformed(err) {
		t.Errorf("strict reader, body cut short: %v, want malformed", err)
	}
}

// Records without a usable time and records that do not decode are
// counted apart, by the window of their record timestamp, by the
// producer and by a tier alike.
func TestNoTimeAndMalformedCountedApart(t *testing.T) {
	env := audittest.Start(t)
	ctx := context.Background()
	pub := newPublisher(t, env, audit.TierProducer, nil)
	prod, err := audit.NewProducer(audittest.Client(t, env.Broker.Addr), serializer(t, env, noHeader), pub)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := prod.Produce(ctx, "mixed", map[string]any{"n": int64(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := prod.Produce(ctx, "mixed", map[string]any{"n": "not a long"}, nil); err == nil {
		t.Fatal("an event that does not fit its schema was produced")
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	raw := audittest.Client(t, env.Broker.Addr)
	for _, v := range []string{"plain text", "\x00\x00"} {
		if err := raw.ProduceSync(ctx, &kgo.Record{Topic: "mixed", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c, _, err := audit.Scan(ctx, audit.ScanConfig{Brokers: []string{env.Broker.Addr}, Registry: env.Registry, Topics: []string{"mixed"}})
	if err != nil {
		t.Fatal(err)
	}
	if n, noTime, malformed := c.Total(); n != 0 || noTime != 4 || malformed != 2 {
		t.Errorf("tier counted %d in windows, %d without time, %d malformed; want 0, 4, 2", n, noTime, malformed)
	}
	now := time.Now()
	r := loadEvents(t, env).Report(audit.Options{From: now.Add(-time.Hour), To: now.Add(time.Hour)})
	var noTime, malformed int64
	for _, row := range r.Rows {
		if row.Tier == audit.TierProducer && row.Topic == "mixed" {
			noTime += row.NoTime
			malformed += row.Malformed
			if row.Produced != 0 {
				t.Errorf("producer row %+v: events without time were counted in a window", row)
			}
		}
	}
	if noTime != 4 || malformed != 1 {
		t.Errorf("producer counted %d without time and %d malformed, want 4 and 1 (the event that did not encode)", noTime, malformed)
	}
}

// A producer that cannot read its events' time says why, once per schema
// id, instead of counting no_time in silence.
func TestProducerExplainsNoTimeOnce(t *testing.T) {
	env := audittest.Start(t)
	var logs testenv.SyncBuffer
	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, env.Broker.Addr), Registry: env.Registry,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(context.Background())
	prod, err := audit.NewProducer(audittest.Client(t, env.Broker.Addr), serializer(t, env, noHeader), pub)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := prod.Produce(t.Context(), "bare", map[string]any{"n": int64(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := prod.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if n := strings.Count(out, "counted as no_time"); n != 1 || !strings.Contains(out, `has no top-level field \"header\"`) {
		t.Errorf("%d explanations, want 1 naming the missing field:\n%s", n, out)
	}
}
