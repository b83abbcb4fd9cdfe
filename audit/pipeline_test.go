package audit_test

import (
	"testing"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
)

// Two servers produce pageviews over three windows through the counting
// producer; the live cluster is counted as a tier. Every window of the
// producers and of the live tier holds exactly what was sent.
func TestProducersAndTierAgree(t *testing.T) {
	env := audittest.Start(t)
	ws := pastWindows(3)
	want := map[int]int64{}
	for _, name := range []string{"fe-1", "fe-2"} {
		s := newServer(t, env, name)
		for i, w := range ws {
			n := 100 + 10*i + len(name)
			s.send(t, "pageview", w, n)
			want[i] += int64(n)
		}
		if err := s.pub.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	snapshot(t, env.Broker.Addr, env.Broker.Addr, env.Registry, audit.TierLive, ws, "pageview")

	r := reconcile(t, env.Broker.Addr, env.Registry, ws)
	if len(r.Rows) != 2*len(ws) {
		t.Fatalf("%d rows, want %d (producer and live per window): %+v", len(r.Rows), 2*len(ws), r.Rows)
	}
	for i, w := range ws {
		for _, tier := range []string{audit.TierProducer, audit.TierLive} {
			got := row(t, r, "pageview", w, tier)
			if got.Produced != want[i] || got.Received != want[i] || got.Status != audit.StatusOK || got.Completeness != 100 {
				t.Errorf("window %d tier %s: %+v, want %d produced and received, ok", i, tier, got, want[i])
			}
		}
	}
	if len(r.Lost) != 0 || len(r.Notes) != 0 {
		t.Errorf("lost %v, notes %v; want none", r.Lost, r.Notes)
	}
}
