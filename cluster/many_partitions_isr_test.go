package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestRestartedBrokerRejoinsISRsInFewWrites: three brokers, one topic of
// 300 partitions at RF 3; one broker stops and starts again on its data.
// Its leaders take it back into every ISR, and do so in a few ZooKeeper
// transactions, not one per partition: every state node written in one
// multi shares that multi's zxid, so the number of distinct zxids among the
// rejoined partitions counts the leaders' writes. Each leader used to write
// each partition alone, from a goroutine of its own: at 3,000 partitions
// two thousand of them queued on the view's refresh lock, each patch
// waiting for a whole refresh.
func TestRestartedBrokerRejoinsISRsInFewWrites(t *testing.T) {
	testenv.Slow(t, "a broker stops and rejoins 300 ISRs")
	const n, topic = 300, "rejoin-many"
	connect, brokers := testenv.StartCluster(t, 3)
	adm := kadm.NewClient(newClient(t, brokers[0].Addr))
	ctx := context.Background()
	var last error
	testenv.Eventually(t, 30*time.Second, "creating the topic at RF 3", func() bool {
		resp, err := adm.CreateTopic(ctx, n, 3, nil, topic)
		last = errors.Join(err, resp.Err)
		return last == nil || errors.Is(last, kerr.TopicAlreadyExists)
	})
	inSync := func(want int) func() (bool, string) {
		return func() (bool, string) {
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				return false, err.Error()
			}
			good := 0
			for _, p := range md.Topics[topic].Partitions {
				if p.Leader > 0 && len(p.ISR) == want {
					good++
				}
			}
			return good == n, fmt.Sprintf("%d of %d partitions led with an ISR of %d", good, n, want)
		}
	}
	testenv.Eventuallyf(t, 60*time.Second, inSync(3))

	old := brokers[2]
	old.Stop()
	testenv.Eventuallyf(t, 60*time.Second, inSync(2))
	s := session(t, connect)
	before := map[int32]int64{}
	for p := range int32(n) {
		_, stat, err := s.Conn.Get(s.Paths.PartitionState(topic, p))
		if err != nil {
			t.Fatal(err)
		}
		before[p] = stat.Mzxid
	}
	testenv.StartClusterBroker(t, connect, 3, testenv.WithDataDir(old.DataDir), testenv.WithAddr(old.Addr))
	testenv.Eventuallyf(t, 60*time.Second, inSync(3))

	zxids := map[int64]int{}
	for p := range int32(n) {
		data, stat, err := s.Conn.Get(s.Paths.PartitionState(topic, p))
		if err != nil {
			t.Fatal(err)
		}
		st, err := cluster.DecodePartitionStateNode(data)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(st.ISR, 3) || stat.Mzxid == before[p] {
			t.Fatalf("partition %d: state %+v (zxid %d, %d before the restart): broker 3 not taken back by its leader", p, st, stat.Mzxid, before[p])
		}
		zxids[stat.Mzxid]++
	}
	t.Logf("%d partitions rejoined the ISR in %d ZooKeeper transactions", n, len(zxids))
	if len(zxids) > n/10 {
		t.Errorf("%d partitions rejoined the ISR in %d ZooKeeper transactions: the leaders' ISR changes are not batched", n, len(zxids))
	}
}
