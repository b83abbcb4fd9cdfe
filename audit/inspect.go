package audit

import (
	"cmp"
	"slices"
	"time"
)

// Inspection is what one tier stated: its publishers and its counts per
// topic, window and server, as the store adds them up (`tributary audit
// inspect`). It is for finding out why a report says what it says.
type Inspection struct {
	Tier       string
	Publishers []PublisherInfo
	Counts     []InspectedCount
}

// PublisherInfo is what the store knows of one publisher.
type PublisherInfo struct {
	ID, Host string
	// Events is how many of its monitoring events arrived, numbered
	// First to Last; Missing is how many numbers in between did not.
	Events        int
	First, Last   int64
	Missing       int64
	Final         bool
	LastPublished time.Time
}

// InspectedCount is a tier's count of one topic, report window and
// server. Distinct is -1 when the tier cannot tell duplicates apart.
type InspectedCount struct {
	Topic    string
	Window   time.Time
	Server   string
	N        int64
	Distinct int64
}

// Inspect returns what tier stated for the windows and topics of o.
func (s *Store) Inspect(tier string, o Options) *Inspection {
	o = o.withDefaults()
	o.Tiers = []string{tier}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := &Inspection{Tier: tier}
	for id, p := range s.pubs {
		if p.tier != tier {
			continue
		}
		pi := PublisherInfo{ID: id, Host: p.host, Events: len(p.seqs), Final: p.final, LastPublished: p.last}
		for seq := range p.seqs {
			if pi.First == 0 || seq < pi.First {
				pi.First = seq
			}
			pi.Last = max(pi.Last, seq)
		}
		pi.Missing = pi.Last - pi.First + 1 - int64(len(p.seqs))
		in.Publishers = append(in.Publishers, pi)
	}
	slices.SortFunc(in.Publishers, func(a, b PublisherInfo) int { return cmp.Compare(a.ID, b.ID) })
	cells, _ := s.cells(o)
	for k, c := range cells {
		if k.tier != tier {
			continue
		}
		for srv, n := range c.servers {
			d, ok := c.distinctOf(srv)
			if !ok {
				d = -1
			}
			in.Counts = append(in.Counts, InspectedCount{Topic: k.topic, Window: k.window, Server: srv, N: n, Distinct: d})
		}
	}
	slices.SortFunc(in.Counts, func(a, b InspectedCount) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), a.Window.Compare(b.Window), cmp.Compare(a.Server, b.Server))
	})
	return in
}
