package mirror_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
	"github.com/tributary-io/tributary/schema"
)

// The analysis cluster as a tier: producers in the live cluster count what
// they send, the mirror counts what the target acknowledged, and the
// reconciler, reading the target's _audit topic (the producers' counts
// arrive there by the mirror too), finds the mirror tier complete.
func TestMirrorCountsForTheAudit(t *testing.T) {
	const events = 1000
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg, _ := startRegistry(t) // one registry shared by both datacenters
	d := startDC(t, "dc1", 1)
	target := testenv.StartBroker(t)
	createTopic(t, d.addrs(), "pageviews", 3)

	// Producers in dc1 count into dc1's _audit.
	livePub, err := audit.NewPublisher(audit.PublisherConfig{Client: newClient(t, d.addrs()), Registry: reg, Window: time.Minute, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ser, err := schema.NewSerializer(reg, schema.SerializerConfig{Schema: readSchema(t, "pageview.avsc"), Service: "frontend"})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := audit.NewProducer(newClient(t, d.addrs()), ser, livePub)
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		ev := map[string]any{"memberId": int64(i), "pageKey": fmt.Sprint("p", i%5), "locale": "en_US", "durationMs": int32(i), "referrer": nil, "userAgent": nil}
		if err := prod.Produce(ctx, "pageviews", ev, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := livePub.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// The mirror counts into the target's _audit as tier "mirror".
	mirrorPub, err := audit.NewPublisher(audit.PublisherConfig{Client: newClient(t, []string{target.Addr}), Registry: reg,
		Tier: audit.TierMirror, Window: time.Minute, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	headers, err := audit.NewHeaderReader(reg, audit.HeaderReaderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{d.source()}, Target: []string{target.Addr}, KeepSchemaIDs: true,
		Auditor: mirror.NewAuditTier(mirrorPub, headers, testLogger(t))})
	waitForCount(t, []string{target.Addr}, "pageviews", events, time.Minute)
	liveAudit, _ := endOffsets(t, newClient(t, d.addrs()), audit.DefaultTopic)
	waitForCount(t, []string{target.Addr}, audit.DefaultTopic, liveAudit, time.Minute)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := mirrorPub.Close(ctx); err != nil {
		t.Fatal(err)
	}

	st := audit.NewStore()
	if _, err := audit.Load(ctx, audit.Source{Brokers: []string{target.Addr}, Registry: reg, Logger: testLogger(t)}, time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	rep := st.Report(audit.Options{Window: time.Minute, Topics: []string{"pageviews"}})
	var produced, received int64
	for _, r := range rep.Rows {
		if r.Tier == audit.TierMirror {
			produced += r.Produced
			received += r.Received
			if r.Missing != 0 || r.Excess != 0 || r.Malformed != 0 || r.NoTime != 0 {
				t.Fatalf("mirror tier, window %v: %+v", r.WindowStart, r)
			}
		}
	}
	if produced != events || received != events {
		t.Fatalf("the report has %d produced and %d received by the mirror tier, want %d each; rows %+v notes %v", produced, received, events, rep.Rows, rep.Notes)
	}
}
