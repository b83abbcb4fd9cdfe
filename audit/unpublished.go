package audit

import (
	"cmp"
	"slices"
	"time"
)

// WindowCount is a number of events of a topic in a window.
type WindowCount struct {
	Topic  string
	Window time.Time
	N      int64
}

// Unpublished returns what the publisher counted and has not had
// acknowledged, per topic and window (events, no_time and malformed
// together), so that a process that must exit before its counts are
// published can say which are missing from the audit.
func (p *Publisher) Unpublished() []WindowCount {
	p.mu.Lock()
	defer p.mu.Unlock()
	sum := map[TopicWindow]int64{}
	for k, n := range p.pending.Events {
		sum[TopicWindow{k.Topic, k.Window}] += n
	}
	for _, m := range []map[TopicWindow]int64{p.pending.NoTime, p.pending.Malformed} {
		for k, n := range m {
			sum[k] += n
		}
	}
	for _, e := range p.outbox {
		for _, c := range e.Counts {
			sum[TopicWindow{c.Topic, e.Window}] += c.N
		}
		for _, c := range append(slices.Clone(e.NoTime), e.Malformed...) {
			sum[TopicWindow{c.Topic, e.Window}] += c.N
		}
	}
	out := make([]WindowCount, 0, len(sum))
	for k, n := range sum {
		if n != 0 {
			out = append(out, WindowCount{Topic: k.Topic, Window: k.Window, N: n})
		}
	}
	slices.SortFunc(out, func(a, b WindowCount) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), a.Window.Compare(b.Window))
	})
	return out
}
