package quota

import (
	"testing"
	"time"
)

// TestQuotaPrecedence: for one quota type the most specific configured
// entity wins, in Kafka's order, and a default is counted per user or
// client id it applies to.
func TestQuotaPrecedence(t *testing.T) {
	u, c := named("alice"), named("app")
	d, none := defaultPart, entityPart{}
	all := []Entity{
		{u, c}, {u, d}, {u, none}, {d, c}, {d, d}, {d, none}, {none, c}, {none, d},
	}
	// With the first i entries removed, entry i must apply.
	for i, want := range all {
		table := Table{}
		for j, e := range all[i:] {
			table[e] = Values{ProducerByteRate: float64(100 + i + j)}
		}
		table[Entity{named("bob"), c}] = Values{ProducerByteRate: 1} // someone else's
		rate, bk, ok := table.resolve("alice", "app", ProducerByteRate)
		if !ok || rate != float64(100+i) {
			t.Errorf("step %d: rate %v ok %v, want %d from %+v", i, rate, ok, 100+i, want)
			continue
		}
		counted := want
		if counted.user.def {
			counted.user = u
		}
		if counted.client.def {
			counted.client = c
		}
		if bk.entity != counted {
			t.Errorf("step %d: counted under %+v, want %+v", i, bk.entity, counted)
		}
		if _, _, ok := table.resolve("alice", "app", ConsumerByteRate); ok {
			t.Errorf("step %d: a consumer quota applies though only producer quotas are set", i)
		}
	}
}

// TestQuotaThrottleIsDebtOverRate: a client gets a second of its quota at
// once; what it sends beyond that is owed and throttles it for debt/rate,
// and the debt is paid off at the quota's rate.
func TestQuotaThrottleIsDebtOverRate(t *testing.T) {
	q := &Manager{buckets: map[bucketKey]*bucket{}}
	table := Table{{user: named("alice")}: {ProducerByteRate: 1000}}
	q.table.Store(&table)
	now := time.Unix(1000, 0)
	q.now = func() time.Time { return now }

	steps := []struct {
		advance time.Duration
		bytes   int64
		want    time.Duration
	}{
		{0, 1000, 0},                     // the first second's worth
		{0, 500, 500 * time.Millisecond}, // 500 bytes owed at 1000/s
		{250 * time.Millisecond, 0, 250 * time.Millisecond}, // paid off a quarter second
		{2 * time.Second, 0, 0},                             // paid; the bucket refills
		{0, 3000, 2 * time.Second},                          // 1000 available, 2000 owed
		{time.Hour, 100_000_000, MaxThrottle},               // bounded
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		if got := q.Record("alice", "any", ProducerByteRate, s.bytes); got != s.want {
			t.Errorf("step %d: throttle %v, want %v", i, got, s.want)
		}
	}
	if got := q.Record("bob", "any", ProducerByteRate, 1<<30); got != 0 {
		t.Errorf("a user without quota was throttled %v", got)
	}
	// A bucket that has refilled is forgotten.
	now = now.Add(48 * time.Hour)
	q.mu.Lock()
	q.dropFull(now)
	n := len(q.buckets)
	q.mu.Unlock()
	if n != 0 {
		t.Errorf("%d refilled buckets kept", n)
	}
}
