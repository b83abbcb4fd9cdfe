package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
)

// Each running tier measures how long after their header time it counted
// the events, per window: the report gives p50 and p99 per window and
// tier, as the top of a power-of-two bucket of milliseconds. Here the
// producers count 90 events 300 ms after their time and 10 after 5 s; the
// mirror counts them all 40 s after.
func TestLatencyPerWindowAndTier(t *testing.T) {
	env := audittest.Start(t)
	w := pastWindows(1)[0]
	at := w.Add(time.Minute)
	publish := func(tier string, now time.Time, n int64) {
		pub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, env.Broker.Addr), Registry: env.Registry,
			Tier: tier, Host: "fe-1", Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		pub.CountN("pageview", at, "fe-1", n)
		if err := pub.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	publish(audit.TierProducer, at.Add(300*time.Millisecond), 90)
	publish(audit.TierProducer, at.Add(5*time.Second), 10)
	publish(audit.TierMirror, at.Add(40*time.Second), 100)

	r := reconcile(t, env.Broker.Addr, env.Registry, []time.Time{w})
	for _, c := range []struct {
		tier     string
		p50, p99 int64
	}{
		{audit.TierProducer, 512, 8192}, // 300 ms in [256, 512), 5 s in [4096, 8192)
		{audit.TierMirror, 65536, 65536},
	} {
		got := row(t, r, "pageview", w, c.tier)
		if got.LatencyP50 != c.p50 || got.LatencyP99 != c.p99 {
			t.Errorf("tier %s: latency p50 %d ms, p99 %d ms; want %d and %d", c.tier, got.LatencyP50, got.LatencyP99, c.p50, c.p99)
		}
	}
}
