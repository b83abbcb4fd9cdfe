package audit

import (
	"sync"
	"time"
)

// Store holds what monitoring events say, ready to be reconciled: counts
// added up per tier (DELTA events, each id once), the latest statement of
// each snapshot source (SNAPSHOT events), and per publisher the sequence
// numbers seen, so lost events can be found. It is safe for concurrent
// use: `audit serve` adds events while pages are rendered.
type Store struct {
	mu         sync.Mutex
	ids        map[[16]byte]struct{}
	duplicates int64
	delta      map[countKey]int64
	deltaAnom  map[anomKey]anomalies
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
}

type seqInfo struct {
	window   time.Time
	size     time.Duration
	previous []Prior
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{
		ids:       map[[16]byte]struct{}{},
		delta:     map[countKey]int64{},
		deltaAnom: map[anomKey]anomalies{},
		snaps:     map[snapKey]*snapState{},
		pubs:      map[string]*pubState{},
	}
}

// Add records a monitoring event. It returns false, and changes nothing,
// for an event whose id was already added: a monitoring event delivered
// twice is counted once.
func (s *Store) Add(e *Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.ids[e.ID]; dup {
		s.duplicates++
		return false
	}
	s.ids[e.ID] = struct{}{}
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
	return true
}

func (s *Store) addPublisher(e *Event) {
	p := s.pubs[e.Publisher]
	if p == nil {
		p = &pubState{tier: e.Tier, host: e.Host, seqs: map[int64]seqInfo{}}
		s.pubs[e.Publisher] = p
	}
	p.seqs[e.Sequence] = seqInfo{window: e.Window, size: e.Size, previous: e.Previous}
	p.final = p.final || e.Final
	if e.Published.After(p.last) {
		p.last = e.Published
	}
	p.lastSeq = max(p.lastSeq, e.Sequence)
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
		st := &snapState{at: at, servers: map[string]int64{}}
		for _, c := range e.Counts {
			if c.Topic == t {
				st.servers[c.Server] += c.N
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
