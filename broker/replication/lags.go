package replication

import "github.com/tributary-io/tributary/broker/partition"

// FollowerLag is one follower's lag as its leader sees it: the leader's
// log end offset minus the follower's fetched (fsynced) end.
type FollowerLag struct {
	Topic     string
	Partition int32
	Replica   int32
	Lag       int64
}

// FollowerLags reads, for every partition this broker leads in its
// current leader epoch and whose log is open, each follower's lag.
func (rs *Manager) FollowerLags(logEnd map[partition.Key]int64) []FollowerLag {
	rs.mu.Lock()
	led := make([]*leaderState, 0, len(rs.leading))
	for _, ls := range rs.leading {
		led = append(led, ls)
	}
	rs.mu.Unlock()
	var out []FollowerLag
	for _, ls := range led {
		end, ok := logEnd[partition.Key{Topic: ls.key.topic, Partition: ls.key.p}]
		if !ok {
			continue
		}
		t, ok := rs.env.meta.Topic(ls.key.topic)
		st, sok := t.StateOf(ls.key.p)
		if !ok || !sok || !rs.env.leads(st) || st.LeaderEpoch != ls.epoch {
			continue // no longer led: ShrinkISRs drops it
		}
		ls.mu.Lock()
		for id, f := range ls.followers {
			if f.end >= 0 {
				out = append(out, FollowerLag{ls.key.topic, ls.key.p, id, max(end-f.end, 0)})
			}
		}
		ls.mu.Unlock()
	}
	return out
}
