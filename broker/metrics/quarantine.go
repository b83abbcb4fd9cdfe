package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/broker/log"
)

// quarantineMetrics count what recovery, the scrubber and the read check
// moved out of the logs as damaged (log.LostRange): each range is also
// logged with its offsets, but an alert needs a number. On a replicated
// partition the offsets are fetched again from the leader afterwards
// (broker/replication/repair.go), so a count here is not by itself a loss.
type quarantineMetrics struct {
	ranges, offsets prometheus.Counter
}

func newQuarantineMetrics() quarantineMetrics {
	return quarantineMetrics{
		ranges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_log_quarantined_ranges_total",
			Help: "Damaged stretches of segments quarantined by recovery, the scrubber or a read (CRC or framing wrong): each lost its offsets on this replica.",
		}),
		offsets: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_log_quarantined_offsets_total",
			Help: "Offsets the quarantined stretches held; a replicated partition fetches them again from its leader, a partition with one replica has lost them.",
		}),
	}
}

// onLost is log.Config.OnLost.
func (q quarantineMetrics) onLost(r log.LostRange) {
	q.ranges.Inc()
	if n := r.NextOffset - r.FirstOffset; n > 0 {
		q.offsets.Add(float64(n))
	}
}
