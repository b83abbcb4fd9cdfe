package audit

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Key says what a count is about: a topic, a window (its start) of event
// header time, and the header's server.
type Key struct {
	Topic  string
	Window time.Time
	Server string
}

// TopicWindow is a topic in a window.
type TopicWindow struct {
	Topic  string
	Window time.Time
}

// Counts is what one counter saw: events per (topic, window, server), and
// apart from them the events it could not place in a window of event time,
// by the window in which they were seen. It is not safe for concurrent use.
type Counts struct {
	Events    map[Key]int64
	NoTime    map[TopicWindow]int64
	Malformed map[TopicWindow]int64
	// Distinct, when not nil, says how many of Events are distinct events
	// (by their header), the rest being duplicates: scans know it,
	// running counters do not.
	Distinct map[Key]int64
	// Latency, when not nil, holds per topic and window the histogram of
	// how long after their header time the events were counted (see
	// latencyBucket): running counters know it.
	Latency map[TopicWindow][]int64
}

// NewCounts returns empty Counts.
func NewCounts() *Counts {
	return &Counts{Events: map[Key]int64{}, NoTime: map[TopicWindow]int64{}, Malformed: map[TopicWindow]int64{}}
}

// Clone returns a copy of c.
func (c *Counts) Clone() *Counts {
	out := &Counts{Events: maps.Clone(c.Events), NoTime: maps.Clone(c.NoTime), Malformed: maps.Clone(c.Malformed), Distinct: maps.Clone(c.Distinct)}
	if c.Latency != nil {
		out.Latency = make(map[TopicWindow][]int64, len(c.Latency))
		for k, b := range c.Latency {
			out.Latency[k] = slices.Clone(b)
		}
	}
	return out
}

// Empty reports whether nothing was counted.
func (c *Counts) Empty() bool {
	return len(c.Events) == 0 && len(c.NoTime) == 0 && len(c.Malformed) == 0
}

// Total returns the number of events counted in windows, and apart.
func (c *Counts) Total() (inWindows, noTime, malformed int64) {
	for _, n := range c.Events {
		inWindows += n
	}
	for _, n := range c.NoTime {
		noTime += n
	}
	for _, n := range c.Malformed {
		malformed += n
	}
	return inWindows, noTime, malformed
}

// Windows returns every window that holds a count, in order.
func (c *Counts) Windows() []time.Time {
	seen := map[time.Time]bool{}
	for k := range c.Events {
		seen[k.Window] = true
	}
	for k := range c.NoTime {
		seen[k.Window] = true
	}
	for k := range c.Malformed {
		seen[k.Window] = true
	}
	out := make([]time.Time, 0, len(seen))
	for w := range seen {
		out = append(out, w)
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// take moves the counts of window w out of c into a monitoring event's
// fields, sorted so that equal counts give equal events.
func (c *Counts) take(w time.Time) (counts []Count, noTime, malformed []TopicCount) {
	for k, n := range c.Events {
		if k.Window.Equal(w) {
			d, ok := c.Distinct[k]
			if !ok {
				d = -1
			}
			counts = append(counts, Count{Topic: k.Topic, Server: k.Server, N: n, Distinct: d})
			delete(c.Events, k)
			delete(c.Distinct, k)
		}
	}
	slices.SortFunc(counts, func(a, b Count) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Server, b.Server))
	})
	return counts, takeTopics(c.NoTime, w), takeTopics(c.Malformed, w)
}

func takeTopics(m map[TopicWindow]int64, w time.Time) []TopicCount {
	var out []TopicCount
	for k, n := range m {
		if k.Window.Equal(w) {
			out = append(out, TopicCount{Topic: k.Topic, N: n})
			delete(m, k)
		}
	}
	slices.SortFunc(out, func(a, b TopicCount) int { return cmp.Compare(a.Topic, b.Topic) })
	return out
}

// eventTopics lists the topics an event speaks of, for Prior.
func eventTopics(e *Event) []string {
	var ts []string
	for _, c := range e.Counts {
		ts = append(ts, c.Topic)
	}
	for _, c := range e.NoTime {
		ts = append(ts, c.Topic)
	}
	for _, c := range e.Malformed {
		ts = append(ts, c.Topic)
	}
	ts = append(ts, e.Covers...)
	slices.Sort(ts)
	return slices.Compact(ts)
}

// takeLatency moves the latency histograms of window w out of c.
func (c *Counts) takeLatency(w time.Time) []LatencyCount {
	var out []LatencyCount
	for k, b := range c.Latency {
		if k.Window.Equal(w) {
			out = append(out, LatencyCount{Topic: k.Topic, Buckets: b})
			delete(c.Latency, k)
		}
	}
	slices.SortFunc(out, func(a, b LatencyCount) int { return cmp.Compare(a.Topic, b.Topic) })
	return out
}
