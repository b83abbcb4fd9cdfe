package mirror

import (
	"github.com/prometheus/client_golang/prometheus"
)

// events are the mirror's metrics that exist only as events (an
// acknowledgement, a rewritten schema id), so they cannot be read from
// Status at scrape time. Labelled by source only: the set of sources is
// fixed by the configuration.
type events struct {
	ackLatency *prometheus.HistogramVec
	translated *prometheus.CounterVec
	failures   *prometheus.CounterVec
}

func newEvents() *events {
	return &events{
		ackLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tributary_mirror_ack_latency_seconds",
			Help: "Time from sending a record to the target to the target's acknowledgement (acks=all: the record is on the target's disk). " +
				"The lag counts a record as copied only after this.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. 16 s
		}, []string{"source"}),
		translated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_mirror_schema_ids_translated_total",
			Help: "Records whose schema id was rewritten to the target registry's id for the same schema.",
		}, []string{"source"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_mirror_errors_total",
			Help: "Failed attempts the mirror retries, by what failed: the source cluster, the target cluster or a schema registry. " +
				"A growing count with a flat copy rate means the mirror is waiting on that side.",
		}, []string{"side"}),
	}
}

func (e *events) collectors() []prometheus.Collector {
	return []prometheus.Collector{e.ackLatency, e.translated, e.failures}
}
