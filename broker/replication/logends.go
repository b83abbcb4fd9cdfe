package replication

// Log-end reports (cluster/logends.go). When every in-sync replica of a
// partition restarted, each may have lost a different part of its log's
// tail, so the controller takes the partition offline and elects the
// longest log. A broker that finds itself in the ISR of an offline
// replicated partition reports where its log ends, once per leader epoch;
// one that holds no copy reports 0.

import (
	"os"
	"slices"

	"github.com/tributary-io/tributary/cluster"
)

// logEndReporter is cluster metadata that collects the reports
// (cluster.ZooKeeper).
type logEndReporter interface {
	ReportLogEnd(topic string, partition, leaderEpoch int32, end int64) error
}

// ReportLogEnds runs after every view change.
func (rs *Manager) ReportLogEnds() {
	r, ok := rs.env.meta.(logEndReporter)
	if !ok {
		return
	}
	for _, t := range rs.env.meta.Topics() {
		if !t.Replicated() {
			continue
		}
		for p := range int32(len(t.Replicas)) {
			st, ok := t.StateOf(p)
			if !ok || st.Leader >= 0 || !slices.Contains(st.ISR, rs.env.selfID) {
				continue
			}
			rs.reportLogEnd(r, t, p, st.LeaderEpoch)
		}
	}
}

func (rs *Manager) reportLogEnd(r logEndReporter, t cluster.Topic, p, leaderEpoch int32) {
	key := partKey{t.Name, p}
	rs.mu.Lock()
	e, done := rs.reported[key]
	rs.mu.Unlock()
	if done && e == leaderEpoch {
		return
	}
	end := int64(0)
	if _, err := os.Stat(rs.env.logs.Dir(t.Name, p)); err == nil {
		l, err := rs.env.logs.OpenCold(t, p)
		if err != nil {
			rs.env.logger.Warn("cannot report the log end of an offline partition: its log does not open", "topic", t.Name, "partition", p, "err", err)
			return
		}
		end = l.LogEndOffset()
	}
	if err := r.ReportLogEnd(t.Name, p, leaderEpoch, end); err != nil {
		rs.env.logger.Warn("reporting the log end of an offline partition failed; the next view change retries", "topic", t.Name, "partition", p, "err", err)
		return
	}
	rs.env.logger.Info("reported the log end of an offline partition whose isr lists this broker", "topic", t.Name, "partition", p, "leader_epoch", leaderEpoch, "log_end", end)
	rs.mu.Lock()
	rs.reported[key] = leaderEpoch
	rs.mu.Unlock()
}
