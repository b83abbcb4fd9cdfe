package mirror

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is the mirror's Prometheus collector. Everything but the
// acknowledgement latency and the translated schema ids (events) is read
// from Status at scrape time, so copying pays nothing for it. Series are per
// source partition this process copies (bounded by the sources' partition
// counts); counters count since this process claimed the partition, so a
// rebalance shows as a counter reset, which rate() handles.
func (m *Mirror) Metrics() prometheus.Collector { return mirrorCollector{m} }

type mirrorCollector struct{ m *Mirror }

var (
	mirrorLabels     = []string{"source", "topic", "partition"}
	descMirrorCopied = prometheus.NewDesc("tributary_mirror_records_copied_total",
		"Records of the source partition the target acknowledged (acks=all).", mirrorLabels, nil)
	descMirrorBytes = prometheus.NewDesc("tributary_mirror_bytes_copied_total",
		"Key and value bytes of the source partition the target acknowledged.", mirrorLabels, nil)
	descMirrorLag = prometheus.NewDesc("tributary_mirror_lag",
		"Records of the source partition not yet safely in the target: the source's high watermark minus the acknowledged offset.", mirrorLabels, nil)
	descMirrorInFlight = prometheus.NewDesc("tributary_mirror_in_flight",
		"Records of the source partition sent to the target and not yet acknowledged.", mirrorLabels, nil)
	descMirrorResumed = prometheus.NewDesc("tributary_mirror_resumed_offset",
		"Source offset where this process started copying the partition, found in the target's tail (the mirror keeps no offsets).", mirrorLabels, nil)
	descMirrorStopped = prometheus.NewDesc("tributary_mirror_partition_stopped",
		"1 when the partition stopped copying because one of its records cannot be copied (refused by the target, unresolvable schema id); the other partitions go on. The log says which record.", mirrorLabels, nil)
	descMirrorSkipped = prometheus.NewDesc("tributary_mirror_records_skipped_total",
		"Records not copied because they originated in the target cluster (the loop rule).", mirrorLabels, nil)
	descMirrorUnknown = prometheus.NewDesc("tributary_mirror_unknown_schemas_total",
		"Records copied unchanged because the source registry could not resolve their schema id (--unknown-schemas copy).", mirrorLabels, nil)
	descMirrorLost = prometheus.NewDesc("tributary_mirror_records_lost_total",
		"Records the source deleted (retention shorter than the mirror's lag) before they were copied: lost to the target.", mirrorLabels, nil)
	descMirrorPartitions = prometheus.NewDesc("tributary_mirror_partitions",
		"Source partitions this process copies, per source.", []string{"source"}, nil)
)

func (c mirrorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMirrorCopied, descMirrorBytes, descMirrorLag, descMirrorInFlight,
		descMirrorResumed, descMirrorStopped, descMirrorSkipped, descMirrorUnknown, descMirrorLost, descMirrorPartitions} {
		ch <- d
	}
	for _, e := range c.m.events.collectors() {
		e.Describe(ch)
	}
}

func (c mirrorCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.m.events.collectors() {
		e.Collect(ch)
	}
	for _, s := range c.m.Status().Sources {
		ch <- prometheus.MustNewConstMetric(descMirrorPartitions, prometheus.GaugeValue, float64(len(s.Partitions)), s.Name)
		for _, p := range s.Partitions {
			labels := []string{s.Name, p.Topic, strconv.Itoa(int(p.Partition))}
			put := func(d *prometheus.Desc, t prometheus.ValueType, v int64) {
				ch <- prometheus.MustNewConstMetric(d, t, float64(v), labels...)
			}
			put(descMirrorCopied, prometheus.CounterValue, p.Copied)
			put(descMirrorBytes, prometheus.CounterValue, p.Bytes)
			put(descMirrorSkipped, prometheus.CounterValue, p.Skipped)
			put(descMirrorUnknown, prometheus.CounterValue, p.UnknownSchemas)
			put(descMirrorLost, prometheus.CounterValue, p.Lost)
			put(descMirrorInFlight, prometheus.GaugeValue, p.InFlight)
			put(descMirrorResumed, prometheus.GaugeValue, p.Resumed)
			stopped := int64(0)
			if p.Stopped != "" {
				stopped = 1
			}
			put(descMirrorStopped, prometheus.GaugeValue, stopped)
			if p.HighWatermark >= 0 {
				put(descMirrorLag, prometheus.GaugeValue, p.Lag)
			}
		}
	}
}
