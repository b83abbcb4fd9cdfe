package audit

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is a Prometheus collector over the reconciler's report, made at
// scrape time by report (e.g. Store.Report over the last day). Labels are
// topic and tier only: the newest closed window stands for each pair, so
// series do not grow with time; the windows below threshold in the
// reported range are counted.
func Metrics(report func() *Report, threshold float64) prometheus.Collector {
	return auditCollector{report: report, threshold: threshold}
}

type auditCollector struct {
	report    func() *Report
	threshold float64
}

var (
	auditLabels        = []string{"topic", "tier"}
	descCompleteness   = prometheus.NewDesc("tributary_audit_completeness_ratio", "Completeness of the newest closed window: events the tier holds over events produced (duplicates not counted), 0 to 1.", auditLabels, nil)
	descWindowEnd      = prometheus.NewDesc("tributary_audit_closed_window_end_timestamp_seconds", "Unix time the newest closed window of the topic and tier ends: completeness is judged up to here.", auditLabels, nil)
	descMissing        = prometheus.NewDesc("tributary_audit_missing_events", "Events produced but missing in the tier, over the closed windows of the reported range.", auditLabels, nil)
	descBelow          = prometheus.NewDesc("tributary_audit_windows_below_threshold", "Closed windows of the reported range whose completeness is below the threshold.", auditLabels, nil)
	descLatencyP99     = prometheus.NewDesc("tributary_audit_latency_p99_seconds", "99th percentile of how long after their header time the tier counted the events of the newest closed window (top of a power-of-two bucket); absent for tiers that do not measure it.", auditLabels, nil)
	descMonitoringLost = prometheus.NewDesc("tributary_audit_monitoring_events_lost", "Monitoring events that never arrived (gaps in publishers' sequences) in the reported range: their windows are not judged.", nil, nil)
)

func (c auditCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCompleteness, descWindowEnd, descMissing, descBelow, descLatencyP99, descMonitoringLost} {
		ch <- d
	}
}

func (c auditCollector) Collect(ch chan<- prometheus.Metric) {
	rep := c.report()
	if rep == nil {
		return
	}
	type key struct{ topic, tier string }
	newest := map[key]Row{}
	missing := map[key]int64{}
	below := map[key]int{}
	for _, r := range rep.Rows {
		if r.Tier == rep.Baseline || !r.Closed() {
			continue
		}
		k := key{r.Topic, r.Tier}
		if old, ok := newest[k]; !ok || r.WindowStart.After(old.WindowStart) {
			newest[k] = r
		}
		missing[k] += r.Missing
		if r.Completeness < c.threshold {
			below[k]++
		}
	}
	for k, r := range newest {
		ch <- prometheus.MustNewConstMetric(descCompleteness, prometheus.GaugeValue, r.Completeness/100, k.topic, k.tier)
		ch <- prometheus.MustNewConstMetric(descWindowEnd, prometheus.GaugeValue, float64(r.WindowEnd.UnixNano())/1e9, k.topic, k.tier)
		ch <- prometheus.MustNewConstMetric(descMissing, prometheus.GaugeValue, float64(missing[k]), k.topic, k.tier)
		ch <- prometheus.MustNewConstMetric(descBelow, prometheus.GaugeValue, float64(below[k]), k.topic, k.tier)
		if r.LatencyP99 > 0 {
			ch <- prometheus.MustNewConstMetric(descLatencyP99, prometheus.GaugeValue, float64(r.LatencyP99)/1e3, k.topic, k.tier)
		}
	}
	ch <- prometheus.MustNewConstMetric(descMonitoringLost, prometheus.GaugeValue, float64(len(rep.Lost)))
}
