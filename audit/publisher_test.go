package audit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func newPublisher(t *testing.T, env *audittest.Env, tier string, clock *fakeClock) *audit.Publisher {
	t.Helper()
	cfg := audit.PublisherConfig{Client: audittest.Client(t, env.Broker.Addr), Registry: env.Registry, Tier: tier, FlushInterval: 20 * time.Millisecond}
	if clock != nil {
		cfg.Now = clock.Now
	}
	p, err := audit.NewPublisher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	return p
}

// loadEvents reads the raw monitoring events of the env's audit topic.
func loadEvents(t *testing.T, env *audittest.Env) *audit.Store {
	t.Helper()
	st := audit.NewStore()
	if _, err := audit.Load(t.Context(), audit.Source{Brokers: []string{env.Broker.Addr}, Registry: env.Registry}, time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	return st
}

// Events whose time lies in a window that already closed and was
// published are published again for that window, by the background
// flush, and counted there, not in the window in which they arrived.
func TestLateEventsCountInTheirWindow(t *testing.T) {
	env := audittest.Start(t)
	ws := pastWindows(3)
	clock := &fakeClock{t: ws[0].Add(time.Minute)}
	prod := newPublisher(t, env, audit.TierProducer, clock)
	mirror := newPublisher(t, env, audit.TierMirror, clock)
	for _, p := range []*audit.Publisher{prod, mirror} {
		p.CountN("clicks", ws[0].Add(30*time.Second), "fe-1", 100)
	}
	clock.Set(ws[1].Add(time.Minute)) // window 0 closes: the loop publishes it
	testenv.Eventually(t, 10*time.Second, "window 0 to be published", func() bool {
		st := audit.NewStore()
		if _, err := audit.Load(t.Context(), audit.Source{Brokers: []string{env.Broker.Addr}, Registry: env.Registry}, time.Time{}, st); err != nil {
			return false // the first publish has not created the topic yet
		}
		r := st.Report(audit.Options{From: ws[0], To: ws[2], Now: ws[2].Add(3 * time.Hour)})
		return len(r.Rows) == 2 && r.Rows[0].Produced == 100 && r.Rows[1].Received == 100
	})
	// Late: five events of window 0 arrive during window 2, next to
	// twenty of window 2 itself.
	clock.Set(ws[2].Add(time.Minute))
	for _, p := range []*audit.Publisher{prod, mirror} {
		p.CountN("clicks", ws[0].Add(9*time.Minute), "fe-1", 5)
		p.CountN("clicks", ws[2].Add(2*time.Minute), "fe-1", 20)
	}
	for _, p := range []*audit.Publisher{prod, mirror} {
		if err := p.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	r := loadEvents(t, env).Report(audit.Options{From: ws[0], To: ws[2].Add(audit.DefaultWindow), Now: ws[2].Add(3 * time.Hour)})
	for _, tier := range []string{audit.TierProducer, audit.TierMirror} {
		if got := row(t, r, "clicks", ws[0], tier); got.Produced != 105 || got.Received != 105 || got.Status != audit.StatusOK {
			t.Errorf("window 0, %s: %+v, want 105 produced and received", tier, got)
		}
		if got := row(t, r, "clicks", ws[2], tier); got.Produced != 20 || got.Received != 20 {
			t.Errorf("window 2, %s: %+v, want 20 (the late events are not counted here)", tier, got)
		}
	}
	if len(r.Notes) != 0 || len(r.Lost) != 0 {
		t.Errorf("notes %v lost %v, want none", r.Notes, r.Lost)
	}
}

// A producer's monitoring event is lost on its way (window 1), and so is
// one of the mirror's (window 2). The report lists both as lost
// monitoring events, marks those windows' rows instead of judging them,
// and no window falls below the threshold: nothing was lost but the
// monitoring.
func TestLostMonitoringEventIsNotDataLoss(t *testing.T) {
	env := audittest.Start(t)
	ws := pastWindows(4)
	prod := newPublisher(t, env, audit.TierProducer, nil)
	mirror := newPublisher(t, env, audit.TierMirror, nil)
	audit.SetDrop(prod, func(e *audit.Event) bool { return e.Window.Equal(ws[1]) })
	audit.SetDrop(mirror, func(e *audit.Event) bool { return e.Window.Equal(ws[2]) })
	for _, w := range ws {
		for _, p := range []*audit.Publisher{prod, mirror} {
			p.CountN("pageview", w.Add(time.Minute), "fe-1", 50)
			if err := p.Flush(t.Context()); err != nil { // one event per window
				t.Fatal(err)
			}
		}
	}
	for _, p := range []*audit.Publisher{prod, mirror} {
		if err := p.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	r := loadEvents(t, env).Report(audit.Options{From: ws[0], To: ws[3].Add(audit.DefaultWindow)})
	if len(r.Lost) != 2 {
		t.Fatalf("lost events %+v, want the producer's and the mirror's", r.Lost)
	}
	for _, l := range r.Lost {
		want := map[string]time.Time{audit.TierProducer: ws[1], audit.TierMirror: ws[2]}[l.Tier]
		if !l.Located || !l.Window.Equal(want) || len(l.Topics) != 1 || l.Topics[0] != "pageview" {
			t.Errorf("lost event %+v, want located at %s, topic pageview", l, want)
		}
	}
	if got := row(t, r, "pageview", ws[1], audit.TierMirror); got.Status != audit.StatusMonitoringLost {
		t.Errorf("window 1 (producer's event lost): %+v, want monitoring-lost", got)
	}
	if got := row(t, r, "pageview", ws[2], audit.TierMirror); got.Status != audit.StatusMonitoringLost || got.Missing != 50 {
		t.Errorf("window 2 (mirror's event lost): %+v, want monitoring-lost", got)
	}
	for _, w := range []time.Time{ws[0], ws[3]} {
		if got := row(t, r, "pageview", w, audit.TierMirror); got.Status != audit.StatusOK {
			t.Errorf("window %s: %+v, want ok", w.Format(time.TimeOnly), got)
		}
	}
	if below := r.Below(99.9); len(below) != 0 {
		t.Errorf("below 99.9%%: %+v; a lost monitoring event is not data loss", below)
	}
}

// Every monitoring event delivered twice (a producer retry, a replayed
// partition) is counted once, and the report says it saw duplicates.
func TestDuplicateMonitoringEventsCountOnce(t *testing.T) {
	env := audittest.Start(t)
	ws := pastWindows(2)
	prod := newPublisher(t, env, audit.TierProducer, nil)
	mirror := newPublisher(t, env, audit.TierMirror, nil)
	for _, w := range ws {
		prod.CountN("clicks", w, "fe-1", 10)
		mirror.CountN("clicks", w, "fe-1", 10)
	}
	for _, p := range []*audit.Publisher{prod, mirror} {
		if err := p.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// Deliver every monitoring event a second time, byte for byte.
	// The copy goes out under the publishers' client id, as a retry would.
	cl := audittest.Client(t, env.Broker.Addr, kgo.ClientID(audit.ClientID), kgo.ConsumeTopics(audit.DefaultTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var recs []*kgo.Record
	for len(recs) < 4 { // at least two windows of each publisher
		fs := cl.PollFetches(t.Context())
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value}) })
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := loadEvents(t, env).Report(audit.Options{From: ws[0], To: ws[1].Add(audit.DefaultWindow)})
	for _, w := range ws {
		if got := row(t, r, "clicks", w, audit.TierMirror); got.Produced != 10 || got.Received != 10 || got.Status != audit.StatusOK {
			t.Errorf("window %s: %+v, want 10 and 10", w.Format(time.TimeOnly), got)
		}
	}
	if len(r.Notes) != 1 {
		t.Errorf("notes %q, want one saying monitoring events were duplicated", r.Notes)
	}
}
