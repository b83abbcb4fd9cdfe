package broker

import (
	"log/slog"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// LeaderForTest is a broker's leader side (replica.go) over real cluster
// metadata, with no server: the broker-epoch tests drive it directly.
type LeaderForTest struct{ b *Broker }

// NewLeaderForTest is broker meta.Self() leading with the high watermarks
// learned (by topic, partition 0) as if from the previous leader epoch.
func NewLeaderForTest(meta cluster.Metadata, logger *slog.Logger, learned map[string]int64) *LeaderForTest {
	b := &Broker{selfID: meta.Self().ID, meta: meta, logger: logger}
	b.replicas = &replicas{b: b, lagMax: time.Hour, leading: map[partKey]*leaderState{}, learned: map[partKey]int64{}}
	for topic, hw := range learned {
		b.replicas.learned[partKey{topic, 0}] = hw
	}
	return &LeaderForTest{b}
}

// Append is the check before a produce appends (its error code, 0 to go on).
func (r *LeaderForTest) Append(t cluster.Topic, p int32, l *log.Log) int16 {
	return r.b.leadForAppend(t, p, l)
}

// Fetch is the bound a fetch by replica (-1: a consumer) at offset gets.
func (r *LeaderForTest) Fetch(t cluster.Topic, p int32, l *log.Log, replica int32, offset int64) (hw int64, code int16) {
	hw, _, _, code = r.b.fetchBounds(t, p, l, replica, offset)
	return hw, code
}

// Lead is the leadership check OffsetForLeaderEpoch makes.
func (r *LeaderForTest) Lead(t cluster.Topic, p int32, l *log.Log) error {
	_, _, err := r.b.replicas.leader(t, p, l)
	return err
}
