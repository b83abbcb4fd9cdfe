// Package quota enforces client quotas, Kafka's model: a produce and a fetch byte rate
// (producer_byte_rate, consumer_byte_rate) per user, per client id, or per
// user and client id, each with defaults. For one quota type the first
// entity in Kafka's precedence order that sets it applies:
//
//	user+client-id > user+default client-id > user >
//	default user+client-id > default user+default client-id > default user >
//	client-id > default client-id
//
// A default applies to each user (client id) separately: with a default
// user quota every user has its own allowance, as in Kafka.
//
// Rates are kept in token buckets holding at most one second of the quota:
// the long-run rate is the quota, and a client over it owes the bytes it
// sent beyond it. Its response then carries throttle_time_ms = debt/quota
// and the broker stops reading from its connection for that long (KIP-219):
// a produce is appended and answered at once with the throttle time; a
// fetch by a client already in debt is answered at once with no records
// and the throttle time, so a throttled consumer never holds files open.
// Kafka measures over sampled windows instead; the rate it converges to is
// the same, and a bucket needs no samples. A bucket that has refilled holds
// nothing worth keeping and is dropped, so memory follows the clients
// actively over or near their quota.
//
// Where quotas persist: store.go. The broker owns the connection side: it
// answers with the throttle and mutes the connection (broker/netserver/conn_quota.go).
package quota

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The quota keys Tributary enforces.
const (
	ProducerByteRate = "producer_byte_rate"
	ConsumerByteRate = "consumer_byte_rate"
)

// MaxThrottle bounds one throttle: a single huge request at a tiny quota
// would otherwise mute its connection for hours. What is owed beyond it
// throttles the next request.
const MaxThrottle = 30 * time.Second

// entityPart is one component of a quota entity: absent, the default of
// its type (a null name on the wire), or a named user or client id.
type entityPart struct {
	set  bool
	def  bool
	name string
}

func named(n string) entityPart { return entityPart{set: true, name: n} }

var defaultPart = entityPart{set: true, def: true}

// Entity is what a quota is configured for: a user, a client id, or
// both.
type Entity struct {
	user, client entityPart
}

// Values are an entity's configured quotas by key.
type Values map[string]float64

// Table is an immutable snapshot of every configured quota.
type Table map[Entity]Values

// Manager enforces the configured quotas of one broker.
type Manager struct {
	table atomic.Pointer[Table]
	store Store

	mu      sync.Mutex
	buckets map[bucketKey]*bucket
	sweepAt int              // bucket count at which refilled ones are dropped
	now     func() time.Time // time.Now; a test may stop the clock
}

// minSweep is the bucket count below which refilled buckets are kept.
const minSweep = 1024

// bucketKey is one allowance: the entity whose quota applies, with its
// defaults replaced by the client's names, and the quota type.
type bucketKey struct {
	entity Entity
	key    string
}

// bucket is a token bucket of bytes: it fills at the quota's rate up to one
// second of it, and what a client sends beyond it is debt (tokens < 0).
type bucket struct {
	tokens float64
	last   time.Time
}

func New(store Store) (*Manager, error) {
	q := &Manager{store: store, buckets: map[bucketKey]*bucket{}, now: time.Now}
	if err := q.Reload(); err != nil {
		return nil, err
	}
	return q, nil
}

// reload reads the configured quotas again (another broker changed them).
func (q *Manager) Reload() error {
	t, err := q.store.load()
	if err != nil {
		return err
	}
	q.table.Store(&t)
	return nil
}

// resolve finds the quota of type key for a user and client id: its rate,
// and the bucket it is counted in. ok is false when no quota applies.
func (t Table) resolve(user, client, key string) (rate float64, bk bucketKey, ok bool) {
	u, c := named(user), named(client)
	none := entityPart{}
	order := [...]Entity{
		{u, c}, {u, defaultPart}, {u, none},
		{defaultPart, c}, {defaultPart, defaultPart}, {defaultPart, none},
		{none, c}, {none, defaultPart},
	}
	for _, e := range order {
		if v, found := t[e][key]; found {
			// Each user (client id) a default applies to has its own
			// allowance: count it under the real names.
			if e.user.def {
				e.user = u
			}
			if e.client.def {
				e.client = c
			}
			return v, bucketKey{entity: e, key: key}, true
		}
	}
	return 0, bucketKey{}, false
}

// record counts n bytes against the client's quota of type key and returns
// how long it must now wait: zero unless it owes bytes.
func (q *Manager) Record(user, client, key string, n int64) time.Duration {
	t := *q.table.Load()
	if len(t) == 0 {
		return 0
	}
	rate, bk, ok := t.resolve(user, client, key)
	if !ok {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.refill(bk, rate)
	b.tokens -= float64(n)
	return owed(b.tokens, rate)
}

// owing returns how long the client must still wait for its quota of type
// key, without counting anything.
func (q *Manager) Owing(user, client, key string) time.Duration {
	t := *q.table.Load()
	if len(t) == 0 {
		return 0
	}
	rate, bk, ok := t.resolve(user, client, key)
	if !ok {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return owed(q.refill(bk, rate).tokens, rate)
}

// refill returns bk's bucket filled for the time since it was last used,
// creating it full. Called with q.mu held.
func (q *Manager) refill(bk bucketKey, rate float64) *bucket {
	now := q.now()
	b := q.buckets[bk]
	if b == nil {
		if len(q.buckets) >= max(q.sweepAt, minSweep) {
			// Sweeping again only once the map has doubled keeps the cost
			// per new bucket constant however many clients are active.
			q.dropFull(now)
			q.sweepAt = 2 * len(q.buckets)
		}
		b = &bucket{tokens: rate, last: now}
		q.buckets[bk] = b
		return b
	}
	b.tokens = math.Min(rate, b.tokens+rate*now.Sub(b.last).Seconds())
	b.last = now
	return b
}

// dropFull forgets buckets idle long enough to have refilled: a new full
// bucket is the same thing. Called with q.mu held.
func (q *Manager) dropFull(now time.Time) {
	t := *q.table.Load()
	for bk, b := range q.buckets {
		rate := t[bk.entity][bk.key]
		if rate <= 0 || b.tokens+rate*now.Sub(b.last).Seconds() >= rate {
			delete(q.buckets, bk)
		}
	}
}

// owed is the time a debt of -tokens bytes takes to pay at rate, bounded
// by MaxThrottle.
func owed(tokens, rate float64) time.Duration {
	if tokens >= 0 || rate <= 0 {
		return 0
	}
	return min(time.Duration(-tokens/rate*float64(time.Second)), MaxThrottle)
}

// User is the user name a principal's quotas are configured under.
func User(principal string) string {
	if len(principal) > 5 && principal[:5] == "User:" {
		return principal[5:]
	}
	return principal
}

// ThrottleMillis is a throttle as a response's throttle_time_ms.
func ThrottleMillis(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32(max(d.Milliseconds(), 1))
}

// Table returns the quotas now configured; the caller must not change it.
func (q *Manager) Table() Table { return *q.table.Load() }

// Alter applies ops to e's quotas in the store and then here, returning
// every quota as stored.
func (q *Manager) Alter(e Entity, ops []kmsg.AlterClientQuotasRequestEntryOp) (Table, error) {
	t, err := q.store.update(func(t Table) error {
		applyOps(t, e, ops)
		return nil
	})
	if err != nil {
		return nil, err
	}
	q.table.Store(&t)
	return t, nil
}

// Follow keeps a cluster's quotas current as other brokers change them,
// until stop closes; failed hears a read that failed (the last quotas read
// stay in force). It returns at once for a standalone store.
func (q *Manager) Follow(stop <-chan struct{}, failed func(error)) {
	zs, ok := q.store.(zkStore)
	if !ok {
		return
	}
	zs.watch(stop, func() {
		if err := q.Reload(); err != nil {
			failed(err)
		}
	})
}
