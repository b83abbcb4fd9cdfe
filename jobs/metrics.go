package jobs

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics records load job attempts for Prometheus. Set Runner.Metrics to
// one made by NewMetrics and register it. Labels are job names and topics
// from the spec files, so series are bounded by the configuration.
type Metrics struct {
	runs     *prometheus.CounterVec
	records  *prometheus.HistogramVec
	bytes    *prometheus.HistogramVec
	duration *prometheus.HistogramVec
	lost     *prometheus.CounterVec

	mu         sync.Mutex
	lastCommit map[string]time.Time // topic → end of its last committed run
	behind     map[string]int       // topic → partitions the last committed run left behind the log end
}

var (
	descLastCommit = prometheus.NewDesc("tributary_jobs_last_commit_timestamp_seconds",
		"Unix time a run that loaded the topic last committed: alert when it is older than the job's schedule allows.", []string{"topic"}, nil)
	descBehind = prometheus.NewDesc("tributary_jobs_partitions_behind",
		"Partitions of the topic the last committed run did not load up to the log end it saw at its start (a run limit stopped it).", []string{"topic"}, nil)
)

// NewMetrics returns an empty set of job metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_jobs_runs_total",
			Help: "Load job attempts, by job and outcome (committed or failed); retries count as attempts.",
		}, []string{"job", "outcome"}),
		records: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_jobs_run_records",
			Help:    "Records loaded by one committed attempt, by job.",
			Buckets: prometheus.ExponentialBuckets(1, 10, 10),
		}, []string{"job"}),
		bytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_jobs_run_bytes",
			Help:    "Bytes of warehouse files written by one committed attempt, by job.",
			Buckets: prometheus.ExponentialBuckets(1024, 8, 10), // 1 KiB .. 128 TiB
		}, []string{"job"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_jobs_run_duration_seconds",
			Help:    "Wall time of one attempt, from taking the job's lock to letting go, by job.",
			Buckets: prometheus.ExponentialBuckets(0.1, 3, 10),
		}, []string{"job"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_jobs_lost_ranges_total",
			Help: "Offset ranges retention deleted before a run could load them (data loss), by job.",
		}, []string{"job"}),
		lastCommit: map[string]time.Time{},
		behind:     map[string]int{},
	}
}

// observe records one finished attempt. A nil Metrics records nothing.
func (m *Metrics) observe(e *Entry) {
	if m == nil {
		return
	}
	m.runs.WithLabelValues(e.Job, e.Outcome).Inc()
	m.duration.WithLabelValues(e.Job).Observe(e.Finished.Sub(e.Started).Seconds())
	if len(e.Lost) > 0 {
		m.lost.WithLabelValues(e.Job).Add(float64(len(e.Lost)))
	}
	if e.Outcome != Committed {
		return
	}
	m.records.WithLabelValues(e.Job).Observe(float64(e.Records))
	m.bytes.WithLabelValues(e.Job).Observe(float64(e.Bytes))
	m.mu.Lock()
	defer m.mu.Unlock()
	behind := map[string]int{}
	for _, p := range e.Partitions {
		m.lastCommit[p.Topic] = e.Finished
		behind[p.Topic] += 0
		if p.To < p.End {
			behind[p.Topic]++
		}
	}
	for t, n := range behind {
		m.behind[t] = n
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.runs.Describe(ch)
	m.records.Describe(ch)
	m.bytes.Describe(ch)
	m.duration.Describe(ch)
	m.lost.Describe(ch)
	ch <- descLastCommit
	ch <- descBehind
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.runs.Collect(ch)
	m.records.Collect(ch)
	m.bytes.Collect(ch)
	m.duration.Collect(ch)
	m.lost.Collect(ch)
	m.mu.Lock()
	defer m.mu.Unlock()
	for t, at := range m.lastCommit {
		ch <- prometheus.MustNewConstMetric(descLastCommit, prometheus.GaugeValue, float64(at.UnixNano())/1e9, t)
	}
	for t, n := range m.behind {
		ch <- prometheus.MustNewConstMetric(descBehind, prometheus.GaugeValue, float64(n), t)
	}
}
