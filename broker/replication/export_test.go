package replication

import (
	"log/slog"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// LeaderForTest is a broker's leader side (leader.go) over real cluster
// metadata, with no server: the broker-epoch tests drive it directly.
type LeaderForTest struct{ rs *Manager }

// NewLeaderForTest is broker meta.Self() leading with the high watermarks
// learned (by topic, partition 0) as if from the previous leader epoch.
func NewLeaderForTest(meta cluster.Metadata, logger *slog.Logger, learned map[string]int64) *LeaderForTest {
	rs := &Manager{env: newEnv(Deps{Self: meta.Self().ID, Meta: meta, Logger: logger}), lagMax: time.Hour,
		leading: map[partKey]*leaderState{}, learned: map[partKey]int64{}}
	for topic, hw := range learned {
		rs.learned[partKey{topic, 0}] = hw
	}
	return &LeaderForTest{rs}
}

// Append is the check before a produce appends (its error code, 0 to go on).
func (r *LeaderForTest) Append(t cluster.Topic, p int32, l *log.Log) int16 {
	return r.rs.leadForAppend(t, p, l)
}

// Fetch is the bound a fetch by replica (-1: a consumer) at offset gets.
func (r *LeaderForTest) Fetch(t cluster.Topic, p int32, l *log.Log, replica int32, offset int64) (hw int64, code int16) {
	hw, _, _, code = r.rs.fetchBounds(t, p, l, replica, offset)
	return hw, code
}

// Lead is the leadership check OffsetForLeaderEpoch makes.
func (r *LeaderForTest) Lead(t cluster.Topic, p int32, l *log.Log) error {
	_, err := r.rs.Lead(t, p, l)
	return err
}
