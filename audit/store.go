package audit

import (
	"slices"
	"sync"
	"time"
)

// Store holds what monitoring events say, ready to be reconciled: counts
// added up per tier (DELTA events, each id once), the latest statement of
// each snapshot source (SNAPSHOT events), and per publisher the sequence
// numbers seen, so lost events can be found. It is safe for concurrent
// use: `audit serve` adds events while pages are rendered.
//
// A store made by NewRetainingStore keeps only windows that ended within
// its retention: older windows, the ids of their events and what it knew
// of publishers that went quiet before it are forgotten, so a store fed
// for months holds a bounded amount; events about windows already
// forgotten are ignored (Add returns false).
type Store struct {
	mu         sync.Mutex
	ids        map[[16]byte]time.Time // event id → end of its window
	duplicates int64
	expired    int64

	retain     time.Duration // 0: keep everything
	now        func() time.Time
	horizon    time.Time // windows ending before it are forgotten
	nextForget time.Time
	delta      map[countKey]int64
	deltaAnom  map[anomKey]anomalies
	latency    map[anomKey][]int64 // running counters' latency histograms
	snaps      map[snapKey]*snapState
	pubs       map[string]*pubState
}

type countKey struct {
	tier, topic string
	window      time.Time
	size        time.Duration
	server      string
}

type anomKey struct {
	tier, topic string
	window      time.Time
	size        time.Duration
}

type anomalies struct{ noTime, malformed int64 }

type snapKey struct {
	tier, source, topic string
	window              time.Time
	size                time.Duration
}

// snapState is the latest snapshot of one topic and window by one source.
type snapState struct {
	at      stamp
	servers map[string]int64
	// distinct holds, for the servers whose count said, how many of
	// their events are distinct.
	distinct map[string]int64
	latency  []int64 // a histogram (latencyBucket), where the scan knew arrival times
	anomalies
}

// stamp orders snapshots: the later statement wins.
type stamp struct {
	published time.Time
	publisher string
	seq       int64
}

func (a stamp) before(b stamp) bool {
	if !a.published.Equal(b.published) {
		return a.published.Before(b.published)
	}
	if a.publisher != b.publisher {
		return a.publisher < b.publisher
	}
	return a.seq < b.seq
}

// pubState is what the store knows of one publisher.
type pubState struct {
	tier, host string
	seqs       map[int64]seqInfo
	final      bool
	last       time.Time // latest header time of its events
	lastSeq    int64
	lastSize   time.Duration   // window width of its events
	topics     map[string]bool // every topic it counted
}

type seqInfo struct {
	window   time.Time
	size     time.Duration
	previous []Prior
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{
		ids:       map[[16]byte]time.Time{},
		delta:     map[countKey]int64{},
		deltaAnom: map[anomKey]anomalies{},
		latency:   map[anomKey][]int64{},
		snaps:     map[snapKey]*snapState{},
		pubs:      map[string]*pubState{},
	}
}

// DefaultRetain is how long `audit serve` keeps windows: two weeks, well
// past any report it serves (--last) and any late monitoring event.
const DefaultRetain = 14 * 24 * time.Hour

// NewRetainingStore returns an empty Store that forgets windows which
// ended more than retain before now (its clock; default time.Now).
func NewRetainingStore(retain time.Duration, now func() time.Time) *Store {
	s := NewStore()
	if now == nil {
		now = time.Now
	}
	s.retain, s.now = retain, now
	return s
}

// Add records a monitoring event. It returns false, and changes nothing,
// for an event whose id was already added (a monitoring event delivered
// twice is counted once) and, in a retaining store, for an event about a
// window already forgotten.
func (s *Store) Add(e *Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := e.Window.Add(e.Size)
	if s.retain > 0 {
		s.forgetOld()
		if end.Before(s.horizon) {
			s.expired++
			return false
		}
	}
	if _, dup := s.ids[e.ID]; dup {
		s.duplicates++
		return false
	}
	s.ids[e.ID] = end
	s.addPublisher(e)
	if e.Snapshot {
		s.addSnapshot(e)
		return true
	}
	for _, c := range e.Counts {
		s.delta[countKey{e.Tier, c.Topic, e.Window, e.Size, c.Server}] += c.N
	}
	for _, c := range e.NoTime {
		k := anomKey{e.Tier, c.Topic, e.Window, e.Size}
		a := s.deltaAnom[k]
		a.noTime += c.N
		s.deltaAnom[k] = a
	}
	for _, c := range e.Malformed {
		k := anomKey{e.Tier, c.Topic, e.Window, e.Size}
		a := s.deltaAnom[k]
		a.malformed += c.N
		s.deltaAnom[k] = a
	}
	for _, l := range e.Latency {
		k := anomKey{e.Tier, l.Topic, e.Window, e.Size}
		b := s.latency[k]
		addBuckets(&b, l.Buckets)
		s.latency[k] = b
	}
	return true
}

func (s *Store) addPublisher(e *Event) {
	p := s.pubs[e.Publisher]
	if p == nil {
		p = &pubState{tier: e.Tier, host: e.Host, seqs: map[int64]seqInfo{}, topics: map[string]bool{}}
		s.pubs[e.Publisher] = p
	}
	p.seqs[e.Sequence] = seqInfo{window: e.Window, size: e.Size, previous: e.Previous}
	// The newest event says whether the publisher stopped cleanly: one
	// that resumes from a WAL goes on numbering after its final event.
	if e.Sequence > p.lastSeq || (e.Sequence == p.lastSeq && e.Final) {
		p.final = e.Final
	}
	if e.Published.After(p.last) {
		p.last = e.Published
	}
	p.lastSeq = max(p.lastSeq, e.Sequence)
	p.lastSize = e.Size
	for _, t := range eventTopics(e) {
		p.topics[t] = true
	}
}

// addSnapshot replaces, for every topic the event covers, an older
// statement of the same source about the same window.
func (s *Store) addSnapshot(e *Event) {
	at := stamp{e.Published, e.Publisher, e.Sequence}
	topics := map[string]bool{}
	for _, t := range e.Covers {
		topics[t] = true
	}
	for _, c := range e.Counts { // a count outside covers is still a statement
		topics[c.Topic] = true
	}
	for t := range topics {
		k := snapKey{e.Tier, e.Source, t, e.Window, e.Size}
		if old := s.snaps[k]; old != nil && !old.at.before(at) {
			continue
		}
		st := &snapState{at: at, servers: map[string]int64{}, distinct: map[string]int64{}}
		unknown := map[string]bool{}
		for _, c := range e.Counts {
			if c.Topic == t {
				st.servers[c.Server] += c.N
				// A count of at least one event has at least one
				// distinct event: 0 (an Event built without it) is
				// as unknown as -1.
				if c.N > 0 && (c.Distinct <= 0 || c.Distinct > c.N) {
					unknown[c.Server] = true
				}
				st.distinct[c.Server] += max(c.Distinct, 0)
			}
		}
		for srv := range unknown {
			delete(st.distinct, srv)
		}
		for _, l := range e.Latency {
			if l.Topic == t {
				addBuckets(&st.latency, l.Buckets)
			}
		}
		for _, c := range e.NoTime {
			if c.Topic == t {
				st.noTime += c.N
			}
		}
		for _, c := range e.Malformed {
			if c.Topic == t {
				st.malformed += c.N
			}
		}
		s.snaps[k] = st
	}
}

// forgetOld moves the horizon to retain before now and, now and then (a
// sweep costs a pass over everything held), forgets what lies before it.
func (s *Store) forgetOld() {
	now := s.now()
	s.horizon = now.Add(-s.retain)
	if now.Before(s.nextForget) {
		return
	}
	s.nextForget = now.Add(max(s.retain/64, time.Minute))
	s.forget(s.horizon)
}

// forget drops every window that ended before horizon, the ids of events
// about them, and publishers with nothing left after them. A publisher's
// sequence numbers are forgotten from the oldest up to the first one still
// kept, so no gap appears in what remains (which would read as a lost
// monitoring event).
func (s *Store) forget(horizon time.Time) {
	// Kept entries are copied into new maps: Go maps never give back the
	// room of deleted entries, so deleting alone would let a map sized for
	// the busiest day stay that size for good.
	s.ids = keep(s.ids, func(_ [16]byte, end time.Time) bool { return !end.Before(horizon) })
	s.delta = keep(s.delta, func(k countKey, _ int64) bool { return !k.window.Add(k.size).Before(horizon) })
	s.deltaAnom = keep(s.deltaAnom, func(k anomKey, _ anomalies) bool { return !k.window.Add(k.size).Before(horizon) })
	s.latency = keep(s.latency, func(k anomKey, _ []int64) bool { return !k.window.Add(k.size).Before(horizon) })
	s.snaps = keep(s.snaps, func(k snapKey, _ *snapState) bool { return !k.window.Add(k.size).Before(horizon) })
	for id, p := range s.pubs {
		seqs := make([]int64, 0, len(p.seqs))
		for seq := range p.seqs {
			seqs = append(seqs, seq)
		}
		slices.Sort(seqs)
		for _, seq := range seqs {
			info := p.seqs[seq]
			if !info.window.Add(info.size).Before(horizon) {
				break
			}
			delete(p.seqs, seq)
		}
		if len(p.seqs) == 0 && p.last.Before(horizon) {
			delete(s.pubs, id)
		}
	}
}

// keep returns a new map of the entries of m that ok keeps.
func keep[K comparable, V any](m map[K]V, ok func(K, V) bool) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		if ok(k, v) {
			out[k] = v
		}
	}
	return out
}
