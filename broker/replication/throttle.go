package replication

// Replication throttles (Kafka's leader.replication.throttled.rate and
// follower.replication.throttled.rate, with the topic configs
// leader/follower.replication.throttled.replicas): a bound on the bytes a
// second that replicas catching up copy, typically those a reassignment
// adds, so that moving a partition does not take the disks and the
// network from producers and consumers.
//
// The topic configs name the throttled replicas, "partition:broker,..." or
// "*" for every one: the leader list the replicas a partition is read
// from (applied by the broker leading it), the follower list those copying
// it (applied by the copying broker). The broker configs give each
// broker's rates (unset: unthrottled). A follower in the ISR is never
// throttled, whatever the lists say: acks=all waits for it. While the
// bytes moved for throttled partitions over the last quotaWindow seconds
// are above the rate, a follower leaves those partitions out of its
// fetches and a leader answers them with no records (the high watermark
// still goes out), until the average falls under the rate again.

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/cluster"
)

const (
	// quotaWindow is the seconds a replication rate is averaged over (as
	// Kafka's replication.quota.window.num of one-second samples).
	quotaWindow = 11
)

// replicationQuota measures the bytes a second moved for throttled
// partitions, in one-second buckets over quotaWindow seconds.
type replicationQuota struct {
	now func() time.Time

	mu      sync.Mutex
	buckets [quotaWindow]struct{ second, bytes int64 }
}

// record counts n bytes moved now.
func (q *replicationQuota) record(n int64) {
	if n <= 0 {
		return
	}
	sec := q.now().Unix()
	q.mu.Lock()
	defer q.mu.Unlock()
	b := &q.buckets[sec%quotaWindow]
	if b.second != sec {
		b.second, b.bytes = sec, 0
	}
	b.bytes += n
}

// exceeded reports whether the bytes moved over the seconds since the
// oldest recorded one (at most quotaWindow, at least one) average more
// than rate a second. math.MaxInt64 is no limit.
func (q *replicationQuota) exceeded(rate int64) bool {
	if rate == math.MaxInt64 {
		return false
	}
	sec := q.now().Unix()
	q.mu.Lock()
	defer q.mu.Unlock()
	var total int64
	oldest := sec
	for _, b := range q.buckets {
		if b.bytes > 0 && b.second > sec-quotaWindow && b.second <= sec {
			total += b.bytes
			oldest = min(oldest, b.second)
		}
	}
	return total/(sec-oldest+1) > rate
}

// ThrottledReplica reports whether a topic's throttled-replicas config
// (key) names partition p on broker id.
func ThrottledReplica(configs map[string]string, key string, p, id int32) bool {
	v := strings.TrimSpace(configs[key])
	if v == "" {
		return false
	}
	if v == "*" {
		return true
	}
	for _, e := range strings.Split(v, ",") {
		ps, bs, _ := strings.Cut(strings.TrimSpace(e), ":")
		pn, perr := strconv.ParseInt(strings.TrimSpace(ps), 10, 32)
		bn, berr := strconv.ParseInt(strings.TrimSpace(bs), 10, 32)
		if perr == nil && berr == nil && int32(pn) == p && int32(bn) == id {
			return true
		}
	}
	return false
}

// outOfSync: replica id is not in partition p's ISR.
func outOfSync(t cluster.Topic, p, id int32) bool {
	st, ok := t.StateOf(p)
	return !ok || !slices.Contains(st.ISR, id)
}

// followerThrottled: this broker copies t's partition p under the
// follower throttle.
func (rs *Manager) followerThrottled(t cluster.Topic, p int32, rate int64) bool {
	return rate != math.MaxInt64 && ThrottledReplica(t.Configs, cluster.FollowerThrottledReplicas, p, rs.env.selfID) && outOfSync(t, p, rs.env.selfID)
}

// leaderThrottled: replica's fetches of t's partition p, which this
// broker leads, are under the leader throttle.
func (rs *Manager) leaderThrottled(t cluster.Topic, p, replica int32, rate int64) bool {
	return rate != math.MaxInt64 && ThrottledReplica(t.Configs, cluster.LeaderThrottledReplicas, p, rs.env.selfID) && outOfSync(t, p, replica)
}

// holdLeaderFetch reports whether a follower's fetch of t's partition p
// is to get no records now: throttled, with the leader's rate used up.
func (rs *Manager) holdLeaderFetch(t cluster.Topic, p, replica int32) bool {
	rate, _ := rs.env.throttleRates()
	if !rs.leaderThrottled(t, p, replica, rate) || !rs.leaderQuota.exceeded(rate) {
		return false
	}
	rs.throttledFetches.Add(1)
	return true
}

// sentToFollower counts the bytes a follower's fetch of t's partition p
// got against the leader throttle, if the partition is throttled.
func (rs *Manager) sentToFollower(t cluster.Topic, p, replica int32, n int64) {
	if rate, _ := rs.env.throttleRates(); rs.leaderThrottled(t, p, replica, rate) {
		rs.leaderQuota.record(n)
	}
}
