package metrics

// The consumer-group side of the broker metrics: members, generations,
// committed offsets and lag, read at scrape time.

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// collectLag reports the members of each group this broker coordinates,
// and the committed offset and lag of every group with commits on the
// partitions stored here, whichever broker coordinates it: in a cluster
// the offsets live in ZooKeeper, shared by both kinds of group (broker-side
// and the paper's), so each partition's lag is reported once, by its
// broker.
func (m *Collector) collectLag(ch chan<- prometheus.Metric, hw map[string]map[int32]int64) {
	groups := m.src.Groups
	if groups == nil {
		return
	}
	if owned, kerrv := groups.List(); kerrv == nil {
		for _, g := range owned {
			members, state := 0, g.State.String()
			if g.Type == "consumer" { // the consumer protocol: its own states and description
				state = g.ConsumerState
				if d, kerrv, _ := groups.DescribeConsumer(g.Name); kerrv == nil {
					members = len(d.Members)
				}
			} else if d, kerrv := groups.Describe(g.Name); kerrv == nil {
				members = len(d.Members)
			}
			ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(members), g.Name, state)
			ch <- prometheus.MustNewConstMetric(descGeneration, prometheus.GaugeValue, float64(g.Generation), g.Name)
		}
	}
	if len(hw) == 0 {
		return
	}
	store := groups.Store()
	names, err := store.Groups()
	if err != nil {
		return
	}
	for _, name := range names {
		offsets, err := store.Load(name)
		if err != nil {
			continue
		}
		for tp, off := range offsets {
			h, ok := hw[tp.Topic][tp.Partition]
			if !ok {
				continue
			}
			part := strconv.Itoa(int(tp.Partition))
			ch <- prometheus.MustNewConstMetric(descCommitted, prometheus.GaugeValue, float64(off.Offset), name, tp.Topic, part)
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(max(h-off.Offset, 0)), name, tp.Topic, part)
		}
	}
}
