package replication

import (
	"math"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/cluster"
)

// The replication quota averages the bytes moved over the seconds since
// the oldest one still in its window: a burst holds the throttled
// partitions back until the average falls under the rate.
func TestReplicationQuotaWindow(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	q := replicationQuota{now: func() time.Time { return now }}
	if q.exceeded(100) {
		t.Fatal("nothing moved yet, but exceeded")
	}
	q.record(1000) // 1000 bytes in the first second
	for _, c := range []struct {
		after time.Duration
		rate  int64
		want  bool
	}{
		{0, 999, true}, {0, 1000, false},
		{4 * time.Second, 100, true},  // 1000 over 5 seconds: 200 a second
		{9 * time.Second, 100, false}, // 1000 over 10 seconds
		{0, math.MaxInt64, false},
	} {
		now = now.Add(c.after)
		if got := q.exceeded(c.rate); got != c.want {
			t.Errorf("%v later, rate %d: exceeded %v, want %v", c.after, c.rate, got, c.want)
		}
	}
	now = now.Add(quotaWindow * time.Second) // the burst left the window
	if q.exceeded(1) {
		t.Error("a burst older than the window still counts")
	}
}

func TestThrottledReplicaList(t *testing.T) {
	for _, c := range []struct {
		v     string
		p, id int32
		want  bool
	}{
		{"", 0, 1, false}, {"*", 3, 7, true}, {"0:1,0:2", 0, 2, true}, {" 0:1 , 1:3 ", 1, 3, true},
		{"0:1,0:2", 1, 2, false}, {"0:1", 0, 3, false},
	} {
		if got := ThrottledReplica(map[string]string{cluster.FollowerThrottledReplicas: c.v}, cluster.FollowerThrottledReplicas, c.p, c.id); got != c.want {
			t.Errorf("%q names %d:%d = %v, want %v", c.v, c.p, c.id, got, c.want)
		}
	}
	for v, ok := range map[string]bool{"": true, "*": true, "0:1,2:3": true, "0": false, "a:1": false, "0:1,": false, "-1:2": false} {
		err := topicconfig.Check(map[string]string{cluster.LeaderThrottledReplicas: v})
		if (err == nil) != ok {
			t.Errorf("%s=%q: %v, want accepted %v", cluster.LeaderThrottledReplicas, v, err, ok)
		}
	}
}
