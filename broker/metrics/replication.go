package metrics

// Replication metrics (Kafka's ReplicaManager and KafkaController
// families). Everything but the ISR change counters is read at scrape
// time from the cluster view and the leader's replica state, so it costs
// nothing between scrapes. The ISR changes are counted by following the
// cluster view (watchISRs), not by a hook in the replication code: that
// way a shrink written by the controller (a follower whose broker died)
// counts as well as one written by this broker (a follower that lagged).

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/cluster"
)

var (
	descUnderReplicated = desc("partitions_under_replicated", "Partitions this broker leads whose ISR is smaller than their replica set (Kafka's UnderReplicatedPartitions): acks=all waits on fewer copies.")
	descOffline         = desc("partitions_offline", "Partitions with no live leader, reported by the controller only (Kafka's OfflinePartitionsCount): they take neither produce nor fetch.")
	descControllerOn    = desc("controller_active", "1 on the broker that is the cluster's controller (a standalone broker is its own), else 0: summed over a cluster it must be 1.")
	descFollowerLag     = desc("replica_follower_lag_messages", "On a partition's leader, per follower: the leader's log end offset minus the follower's fetched (fsynced) end. A follower that has not fetched since this broker became leader has no series yet.", "topic", "partition", "replica")
)

// replicaDescs are the descriptions replication.go collects.
var replicaDescs = []*prometheus.Desc{descUnderReplicated, descOffline, descControllerOn, descFollowerLag}

// collectReplication reports the replication state; logEnd holds the log
// end offset of every open partition log.
func (m *Collector) collectReplication(ch chan<- prometheus.Metric, logEnd map[partition.Key]int64) {
	src := &m.src
	controller := src.IsController == nil || src.IsController()
	live := map[int32]bool{}
	for _, br := range src.Meta.Brokers() {
		live[br.ID] = true
	}
	var under, offline int
	for _, t := range src.Meta.Topics() {
		for p := range t.Partitions() {
			if !t.Replicated() {
				if controller && !live[t.Leaders[p]] {
					offline++
				}
				continue
			}
			st, ok := t.StateOf(p)
			if !ok {
				continue
			}
			if controller && (st.Leader < 0 || !live[st.Leader]) {
				offline++
			}
			if st.Leader == src.Self && len(st.ISR) < len(t.ReplicasOf(p)) {
				under++
			}
		}
	}
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	gauge(descUnderReplicated, under)
	active := 0
	if controller {
		active = 1
		gauge(descOffline, offline)
	}
	gauge(descControllerOn, active)
	if src.Replicas == nil {
		return
	}
	for _, f := range src.Replicas.FollowerLags(logEnd) {
		ch <- prometheus.MustNewConstMetric(descFollowerLag, prometheus.GaugeValue, float64(f.Lag),
			f.Topic, strconv.Itoa(int(f.Partition)), strconv.Itoa(int(f.Replica)))
	}
}

// watchISRs runs until shutdown and counts the ISR shrinks and expansions
// of the partitions this broker leads: an ISR that got smaller (larger)
// within one leader epoch. Changes are seen as the cluster view reports
// them, so a shrink and an expansion that both land between two views
// are not seen; with replica.lag.time.max.ms in seconds that is rare.
func (m *Collector) watchISRs() {
	src := &m.src
	if m.off || src.Meta == nil {
		return
	}
	prev := map[partition.Key]cluster.PartitionState{}
	for {
		changed := src.Meta.Changed()
		cur := map[partition.Key]cluster.PartitionState{}
		for _, t := range src.Meta.Topics() {
			if !t.Replicated() {
				continue
			}
			for p := range t.Partitions() {
				st, ok := t.StateOf(p)
				if !ok || st.Leader != src.Self {
					continue
				}
				key := partition.Key{Topic: t.Name, Partition: p}
				cur[key] = st
				old, seen := prev[key]
				if !seen || old.LeaderEpoch != st.LeaderEpoch || slices.Equal(old.ISR, st.ISR) {
					continue
				}
				switch {
				case len(st.ISR) < len(old.ISR):
					m.isrShrinks.Inc()
				case len(st.ISR) > len(old.ISR):
					m.isrExpands.Inc()
				}
			}
		}
		prev = cur
		select {
		case <-src.Stop:
			return
		case <-changed:
		}
	}
}
