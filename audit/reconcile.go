package audit

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// tierOrder is the pipeline order tiers are listed in; others follow by
// name.
var tierOrder = map[string]int{TierProducer: 1, TierLive: 2, TierMirror: 3, TierAnalysis: 4, TierWarehouse: 5}

// cell is what one tier holds for one topic and report window.
type cell struct {
	servers map[string]int64
	// distinct is, per server, how many of its events are distinct,
	// where every count of the server said (snapshots of scans);
	// unknown lists the servers where one did not.
	distinct map[string]int64
	unknown  map[string]bool
	latency  []int64 // histogram, see latencyBucket
	anomalies
}

// distinctOf returns how many distinct events the cell holds of srv, if
// known.
func (c *cell) distinctOf(srv string) (int64, bool) {
	if c.unknown[srv] {
		return 0, false
	}
	d, ok := c.distinct[srv]
	return d, ok
}

func (c *cell) empty() bool {
	if c.noTime != 0 || c.malformed != 0 {
		return false
	}
	for _, n := range c.servers {
		if n != 0 {
			return false
		}
	}
	return true
}

type cellKey struct {
	tier, topic string
	window      time.Time
}

type topicWindow struct {
	topic  string
	window time.Time
}

// Report reconciles every tier against the baseline.
func (s *Store) Report(o Options) *Report {
	o = o.withDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &Report{From: o.From, To: o.To, Window: o.Window, Grace: o.Grace, GeneratedAt: o.Now, Baseline: o.Baseline}
	cells, notes := s.cells(o)
	r.Notes = append(r.Notes, notes...)

	tiers := map[string]bool{o.Baseline: true}
	pairs := map[topicWindow]bool{}
	for k, c := range cells {
		tiers[k.tier] = true
		// A snapshot states zero for every window it covers; a window
		// where nobody counted anything says nothing and gets no row.
		if !c.empty() {
			pairs[topicWindow{k.topic, k.window}] = true
		}
	}
	for _, t := range o.Tiers {
		tiers[t] = true
	}
	lost, marks := s.lostEvents(o)
	r.Lost = lost
	incomplete := s.producerIncomplete(o)
	for _, t := range o.Expect {
		tiers[t] = true
	}
	r.Tiers = sortTiers(tiers)
	published := s.publishedTiers()
	topics := map[string]bool{}
	for p := range pairs {
		topics[p.topic] = true
		for _, tier := range r.Tiers {
			if tier != o.Baseline && !o.expects(published, p.topic, tier) {
				continue
			}
			r.Rows = append(r.Rows, s.row(o, tier, p, cells, marks, incomplete))
		}
	}
	for t := range topics {
		r.Topics = append(r.Topics, t)
	}
	slices.Sort(r.Topics)
	rank := map[string]int{}
	for i, t := range r.Tiers {
		rank[t] = i
	}
	slices.SortFunc(r.Rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), a.WindowStart.Compare(b.WindowStart), cmp.Compare(rank[a.Tier], rank[b.Tier]))
	})
	r.Windows = columns(o, r.Rows)
	r.Notes = append(r.Notes, s.publisherNotes(o)...)
	if s.duplicates > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d monitoring events were delivered more than once; each was counted once", s.duplicates))
	}
	return r
}

// publishedTiers returns, per topic, the tiers that ever counted it
// (whatever the window: a tier that is behind is still expected).
func (s *Store) publishedTiers() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(topic, tier string) {
		if out[topic] == nil {
			out[topic] = map[string]bool{}
		}
		out[topic][tier] = true
	}
	for k := range s.delta {
		add(k.topic, k.tier)
	}
	for k := range s.deltaAnom {
		add(k.topic, k.tier)
	}
	for k := range s.snaps {
		add(k.topic, k.tier)
	}
	return out
}

// expects says whether topic is expected in tier: the tiers of
// Options.Expect, or by default those that ever counted the topic, so that
// a topic no loader counts (loaded without --audit) is not reported
// missing from the warehouse.
func (o Options) expects(published map[string]map[string]bool, topic, tier string) bool {
	if len(o.Expect) > 0 {
		return slices.Contains(o.Expect, tier)
	}
	return published[topic][tier]
}

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Baseline == "" {
		o.Baseline = TierProducer
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// cells adds up what each tier holds per topic and report window, from
// delta sums and the latest snapshots.
func (s *Store) cells(o Options) (map[cellKey]*cell, []string) {
	cells := map[cellKey]*cell{}
	var notes []string
	badSize := map[string]bool{}
	get := func(tier, topic string, w time.Time, size time.Duration) *cell {
		rw, ok := o.place(w, size)
		if !ok {
			if size > o.Window || o.Window%size != 0 {
				if n := fmt.Sprintf("tier %s counts in %v windows, which do not divide the report's %v: left out", tier, size, o.Window); !badSize[n] {
					badSize[n] = true
					notes = append(notes, n)
				}
			}
			return nil
		}
		if !o.wantTopic(topic) || !o.wantTier(tier) {
			return nil
		}
		k := cellKey{tier, topic, rw}
		c := cells[k]
		if c == nil {
			c = &cell{servers: map[string]int64{}, distinct: map[string]int64{}, unknown: map[string]bool{}}
			cells[k] = c
		}
		return c
	}
	for k, n := range s.delta {
		if c := get(k.tier, k.topic, k.window, k.size); c != nil {
			c.servers[k.server] += n
			c.unknown[k.server] = true // running counters cannot tell duplicates
		}
	}
	for k, a := range s.deltaAnom {
		if c := get(k.tier, k.topic, k.window, k.size); c != nil {
			c.noTime += a.noTime
			c.malformed += a.malformed
		}
	}
	for k, b := range s.latency {
		if c := get(k.tier, k.topic, k.window, k.size); c != nil {
			addBuckets(&c.latency, b)
		}
	}
	for k, st := range s.snaps {
		c := get(k.tier, k.topic, k.window, k.size)
		if c == nil {
			continue
		}
		for srv, n := range st.servers {
			c.servers[srv] += n
			if d, ok := st.distinct[srv]; ok {
				c.distinct[srv] += d
			} else {
				c.unknown[srv] = true
			}
		}
		c.noTime += st.noTime
		c.malformed += st.malformed
		addBuckets(&c.latency, st.latency)
	}
	slices.Sort(notes)
	return cells, notes
}

// place maps a publisher's window to the report window holding it, if
// its width divides the report's and it lies in [From, To).
func (o Options) place(w time.Time, size time.Duration) (time.Time, bool) {
	if size <= 0 || size > o.Window || o.Window%size != 0 {
		return time.Time{}, false
	}
	rw := WindowStart(w, o.Window)
	if (!o.From.IsZero() && rw.Before(o.From)) || (!o.To.IsZero() && !rw.Before(o.To)) {
		return time.Time{}, false
	}
	return rw, true
}

func (o Options) wantTopic(t string) bool { return len(o.Topics) == 0 || slices.Contains(o.Topics, t) }

func (o Options) wantTier(t string) bool {
	return t == o.Baseline || len(o.Tiers) == 0 || slices.Contains(o.Tiers, t)
}

// row compares tier with the baseline for one topic and window.
func (s *Store) row(o Options, tier string, p topicWindow, cells map[cellKey]*cell, marks, incomplete map[cellKey]string) Row {
	base := cells[cellKey{o.Baseline, p.topic, p.window}]
	got := cells[cellKey{tier, p.topic, p.window}]
	r := Row{Topic: p.topic, WindowStart: p.window, WindowEnd: p.window.Add(o.Window), Tier: tier}
	servers := map[string]bool{}
	if base != nil {
		for srv := range base.servers {
			servers[srv] = true
		}
	}
	if got != nil {
		for srv := range got.servers {
			servers[srv] = true
		}
		r.NoTime, r.Malformed = got.noTime, got.malformed
		r.LatencyP50 = latencyPercentile(got.latency, 0.50).Milliseconds()
		r.LatencyP99 = latencyPercentile(got.latency, 0.99).Milliseconds()
	}
	for srv := range servers {
		var pn, rn int64
		if base != nil {
			pn = base.servers[srv]
		}
		if got != nil {
			rn = got.servers[srv]
		}
		r.Produced += pn
		r.Received += rn
		// Where the tier knows which of its events are the same event
		// (a scan), copies are duplicates and only distinct events can
		// be missing or foreign (excess); otherwise every event beyond
		// the produced count is excess.
		if got != nil {
			if d, ok := got.distinctOf(srv); ok {
				r.Duplicates += rn - d
				rn = d
			}
		}
		r.Missing += max(0, pn-rn)
		r.Excess += max(0, rn-pn)
	}
	r.Completeness = completeness(r.Produced, r.Missing)
	note, lost := marks[cellKey{tier, p.topic, p.window}]
	if !lost {
		note, lost = marks[cellKey{o.Baseline, p.topic, p.window}]
	}
	shortNote, short := incomplete[cellKey{o.Baseline, p.topic, p.window}]
	switch {
	case lost:
		r.Status, r.Note = StatusMonitoringLost, note
	case short:
		r.Status, r.Note = StatusProducerIncomplete, shortNote
	case o.Now.Before(r.WindowEnd.Add(o.Grace)):
		r.Status = StatusOpen
	case r.Missing > 0 && r.Excess > 0:
		r.Status = StatusMissingExcess
	case r.Missing > 0:
		r.Status = StatusMissing
	case r.Excess > 0:
		r.Status = StatusExcess
	case r.Duplicates > 0:
		r.Status = StatusDuplicates
	default:
		r.Status = StatusOK
	}
	return r
}

// columns lists every report window from the first row's (or From) to the
// last row's (or the current window, when To is later).
func columns(o Options, rows []Row) []time.Time {
	var first, last time.Time
	for _, r := range rows {
		if first.IsZero() || r.WindowStart.Before(first) {
			first = r.WindowStart
		}
		if r.WindowStart.After(last) {
			last = r.WindowStart
		}
	}
	if !o.From.IsZero() {
		first = WindowStart(o.From, o.Window)
	}
	if !o.To.IsZero() {
		end := o.To.Add(-o.Window)
		if now := WindowStart(o.Now, o.Window); now.Before(end) {
			end = now
		}
		if end.After(last) {
			last = end
		}
	}
	if first.IsZero() {
		return nil
	}
	var out []time.Time
	for w := first; !w.After(last); w = w.Add(o.Window) {
		out = append(out, w)
	}
	return out
}

func sortTiers(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b string) int {
		ra, rb := tierOrder[a], tierOrder[b]
		if ra == 0 {
			ra = len(tierOrder) + 1
		}
		if rb == 0 {
			rb = len(tierOrder) + 1
		}
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(a, b))
	})
	return out
}
