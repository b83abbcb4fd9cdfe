package audit_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
)

// simPublisher feeds a store what one publisher would publish: one DELTA
// event per window, sequence numbers in order, counts for topics×servers.
type simPublisher struct {
	name string
	seq  int64
}

func (p *simPublisher) event(w time.Time, topics, servers int) *audit.Event {
	p.seq++
	e := &audit.Event{Published: w.Add(audit.DefaultWindow + time.Minute), Host: p.name, Tier: audit.TierProducer,
		Publisher: p.name, Sequence: p.seq, Window: w, Size: audit.DefaultWindow}
	for i := range 2 {
		e.ID[i*8] = byte(rand.Uint64()) // only to look like a real id; uniqueness below
	}
	copy(e.ID[2:], fmt.Sprintf("%s/%d", p.name, p.seq))
	for t := range topics {
		for s := range servers {
			e.Counts = append(e.Counts, audit.Count{Topic: fmt.Sprintf("topic-%d", t), Server: fmt.Sprintf("fe-%d", s), N: 10})
		}
	}
	return e
}

// A retaining store forgets windows older than its retention, refuses
// events about them (a late copy cannot bring them back), keeps the recent
// ones whole, and reports no lost monitoring event for the sequence
// numbers it forgot.
func TestStoreForgetsOldWindows(t *testing.T) {
	clock := &fakeClock{}
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	clock.Set(start)
	st := audit.NewRetainingStore(24*time.Hour, clock.Now)
	p := &simPublisher{name: "p1"}
	old := p.event(start, 1, 1)
	if !st.Add(old) {
		t.Fatal("the first event was refused")
	}
	var last time.Time
	for w := start.Add(audit.DefaultWindow); w.Before(start.Add(3 * 24 * time.Hour)); w = w.Add(audit.DefaultWindow) {
		clock.Set(w.Add(audit.DefaultWindow + time.Minute))
		if !st.Add(p.event(w, 1, 1)) {
			t.Fatalf("event of window %v refused", w)
		}
		last = w
	}
	if st.Add(old) {
		t.Error("an event about a forgotten window was added again")
	}
	r := st.Report(audit.Options{From: start, To: start.Add(2 * time.Hour), Now: clock.Now()})
	if len(r.Rows) != 0 {
		t.Errorf("forgotten windows still reported: %+v", r.Rows)
	}
	r = st.Report(audit.Options{From: last.Add(-12 * time.Hour), To: last.Add(audit.DefaultWindow), Now: clock.Now()})
	if want := 12*6 + 1; len(r.Rows) != want {
		t.Errorf("%d rows in the last 12 hours, want %d", len(r.Rows), want)
	}
	if len(r.Lost) != 0 || len(r.Notes) != 0 {
		t.Errorf("lost %v notes %v, want none", r.Lost, r.Notes)
	}
}

// simulateWeeks feeds st the monitoring events of weeks of windows from
// several publishers (a new set each week, as redeployed producers have
// new ids), calling at after each week.
func simulateWeeks(st *audit.Store, clock *fakeClock, weeks int, at func(week int)) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const topics, servers, publishers = 5, 2, 4
	for week := 1; week <= weeks; week++ {
		pubs := make([]*simPublisher, publishers)
		for i := range pubs {
			pubs[i] = &simPublisher{name: fmt.Sprintf("w%d-p%d", week, i)}
		}
		end := start.Add(time.Duration(week) * 7 * 24 * time.Hour)
		for w := end.Add(-7 * 24 * time.Hour); w.Before(end); w = w.Add(audit.DefaultWindow) {
			clock.Set(w.Add(audit.DefaultWindow + time.Minute))
			for _, p := range pubs {
				st.Add(p.event(w, topics, servers))
			}
		}
		at(week)
	}
}

// heapMiB returns the live heap after a collection, and the process's
// resident set as the kernel reports it.
func heapMiB() (heap float64, rss string) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				rss = strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
			}
		}
	}
	return float64(ms.HeapAlloc) / (1 << 20), rss
}

// `audit serve` runs for months: with the default retention (14 days),
// what its store holds stops growing once the retention is full. Twelve
// simulated weeks of ten-minute windows (4 publishers a week, 5 topics × 2
// servers each) must end holding no more than after three weeks, give or
// take the garbage collector; an unbounded store keeps growing. Run with
// -v for the figures.
func TestStoreMemoryBoundedOverWeeks(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates twelve weeks of monitoring events")
	}
	clock := &fakeClock{}
	st := audit.NewRetainingStore(audit.DefaultRetain, clock.Now)
	var at3, at12 float64
	simulateWeeks(st, clock, 12, func(week int) {
		heap, rss := heapMiB()
		t.Logf("week %2d: live heap %6.1f MiB, process RSS %s", week, heap, rss)
		switch week {
		case 3:
			at3 = heap
		case 12:
			at12 = heap
		}
	})
	if at12 > 1.25*at3+2 {
		t.Errorf("live heap grew from %.1f MiB after 3 weeks to %.1f MiB after 12: the store does not forget", at3, at12)
	}
	runtime.KeepAlive(st)
}
