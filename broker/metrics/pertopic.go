package metrics

// Partition-level series at scale. A broker with 10,000 partitions
// exports eight gauges for each (offsets, size, segments, unflushed
// bytes, producer ids, failure), a lag per group and partition and a lag
// per follower: well over 100,000 series a scrape, more than many
// Prometheus setups take from one target. Config.PerTopic (the broker's
// Config.PartitionMetrics = "topic") exports each such family per topic instead: the partition
// label empty, the values summed over the topic's partitions here (lags
// that are about the slowest, a follower's and the last stable offset's,
// take the largest). Queries that already sum or max by topic give the
// same answer either way; the dashboard and the alerts use only those.
//
// The series are aggregated as they leave the collectors, by the label
// names each description was made with (desc records them), so a family
// added later with a partition label is covered without more code.

import (
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The values of the broker's Config.PartitionMetrics.
const (
	PerPartition = "partition"
	PerTopic     = "topic"
)

// ValidGranularity refuses a Config.PartitionMetrics value that is
// neither.
func ValidGranularity(v string) error {
	switch v {
	case "", PerPartition, PerTopic:
		return nil
	}
	return fmt.Errorf("broker: partition metrics %q: use %s or %s", v, PerPartition, PerTopic)
}

// descLabels are the variable label names of the descriptions desc made.
var (
	descLabelsMu sync.Mutex
	descLabels   = map[*prometheus.Desc][]string{}
)

// keepsMax are the families summed up by their largest value per topic.
func keepsMax(d *prometheus.Desc) bool { return d == descFollowerLag || d == descLSOLag }

// sumByTopic sums the partition-labelled series sent to in and passes the
// others straight to out; the sums go out once in is closed.
func sumByTopic(in <-chan prometheus.Metric, out chan<- prometheus.Metric) {
	type series struct {
		desc   *prometheus.Desc
		typ    prometheus.ValueType
		values []string
		v      float64
	}
	type seriesKey struct {
		desc   *prometheus.Desc
		values string
	}
	sums := map[seriesKey]*series{}
	var order []seriesKey
	for m := range in {
		descLabelsMu.Lock()
		names := descLabels[m.Desc()]
		descLabelsMu.Unlock()
		part := -1
		for i, n := range names {
			if n == "partition" {
				part = i
			}
		}
		var pb dto.Metric
		if part < 0 || m.Write(&pb) != nil {
			out <- m
			continue
		}
		byName := make(map[string]string, len(pb.Label))
		for _, lp := range pb.Label {
			byName[lp.GetName()] = lp.GetValue()
		}
		values := make([]string, len(names))
		for i, n := range names {
			values[i] = byName[n]
		}
		values[part] = ""
		typ, v := prometheus.GaugeValue, pb.GetGauge().GetValue()
		if pb.Counter != nil {
			typ, v = prometheus.CounterValue, pb.GetCounter().GetValue()
		}
		key := seriesKey{m.Desc(), strings.Join(values, "\xff")}
		s := sums[key]
		switch {
		case s == nil:
			sums[key] = &series{desc: m.Desc(), typ: typ, values: values, v: v}
			order = append(order, key)
		case keepsMax(s.desc):
			s.v = max(s.v, v)
		default:
			s.v += v
		}
	}
	for _, key := range order {
		s := sums[key]
		out <- prometheus.MustNewConstMetric(s.desc, s.typ, s.v, s.values...)
	}
}
