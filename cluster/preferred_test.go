package cluster_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// replCluster is n in-process brokers on one ZooKeeper whose controller
// rebalances leaders every rebalance (0: never).
type replCluster struct {
	connect   string
	rebalance time.Duration
	brokers   map[int32]*testenv.Broker
}

func startReplCluster(t *testing.T, n int, rebalance time.Duration) *replCluster {
	c := &replCluster{connect: testenv.StartZooKeeper(t), rebalance: rebalance, brokers: map[int32]*testenv.Broker{}}
	for id := int32(1); id <= int32(n); id++ {
		c.start(t, id)
	}
	return c
}

// start starts broker id, on its earlier data and address if it ran
// before.
func (c *replCluster) start(t *testing.T, id int32) {
	t.Helper()
	opts := []testenv.BrokerOption{testenv.WithMetadata(func(self cluster.Broker) (cluster.Metadata, error) {
		self.ID = id
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return cluster.JoinZooKeeper(ctx, c.connect, self, testenv.Logger(t, slog.LevelWarn),
			cluster.WithSessionTimeout(testenv.ClusterSessionTimeout), cluster.WithLeaderRebalance(c.rebalance))
	})}
	if old := c.brokers[id]; old != nil {
		opts = append(opts, testenv.WithDataDir(old.DataDir), testenv.WithAddr(old.Addr))
	}
	c.brokers[id] = testenv.StartBroker(t, opts...)
}

func (c *replCluster) seeds() []string {
	var out []string
	for _, b := range c.brokers {
		out = append(out, b.Addr)
	}
	return out
}

func (c *replCluster) admin(t *testing.T) *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// partition reads a partition's replicas, ISR and leader from Metadata.
func partition(t *testing.T, adm *kadm.Client, topic string, p int32) (kadm.PartitionDetail, bool) {
	md, err := adm.Metadata(context.Background(), topic)
	if err != nil {
		return kadm.PartitionDetail{}, false
	}
	pd, ok := md.Topics[topic].Partitions[p]
	return pd, ok && pd.Err == nil
}

// failOverPreferred creates a topic of three replicas and stops and
// restarts partition 0's preferred leader, so that another replica leads
// it while the preferred one is back in sync. It returns the preferred
// leader.
func failOverPreferred(t *testing.T, c *replCluster, adm *kadm.Client, topic string) int32 {
	t.Helper()
	if _, err := adm.CreateTopic(context.Background(), 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	var pd kadm.PartitionDetail
	testenv.Eventually(t, 10*time.Second, "the topic is led with three in-sync replicas", func() bool {
		var ok bool
		pd, ok = partition(t, adm, topic, 0)
		return ok && pd.Leader >= 0 && len(pd.ISR) == 3
	})
	pref := pd.Replicas[0]
	c.brokers[pref].Stop()
	testenv.Eventually(t, 20*time.Second, "another replica leads", func() bool {
		pd, ok := partition(t, adm, topic, 0)
		return ok && pd.Leader >= 0 && pd.Leader != pref
	})
	c.start(t, pref)
	testenv.Eventually(t, 30*time.Second, "the preferred replica is back in sync", func() bool {
		pd, ok := partition(t, adm, topic, 0)
		return ok && len(pd.ISR) == 3
	})
	return pref
}

// With automatic rebalancing off, a partition stays with the replica that
// took it over until ElectLeaders gives it back to the preferred one;
// asking again is ELECTION_NOT_NEEDED, and so is an unclean election of a
// partition that has a leader.
func TestElectPreferredLeaderOnDemand(t *testing.T) {
	c := startReplCluster(t, 3, 0)
	adm := c.admin(t)
	pref := failOverPreferred(t, c, adm, "elect")
	if pd, _ := partition(t, adm, "elect", 0); pd.Leader == pref {
		t.Fatalf("preferred leader %d leads again with rebalancing off", pref)
	}
	// A client may name a partition twice; the election node may not
	// (DecodeElectionNode refuses it), so the broker writes it once.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrElectLeadersRequest()
	req.TimeoutMillis = 30000
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "elect", Partitions: []int32{0, 0}}}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("ElectLeaders of %s-%d named twice: %v %v", rt.Topic, rp.Partition, err, rp.ErrorMessage)
			}
		}
	}
	// Elected when ElectLeaders answers; Metadata of every broker shows it
	// once its watch fired.
	testenv.Eventually(t, 10*time.Second, "the preferred replica leads", func() bool {
		pd, ok := partition(t, adm, "elect", 0)
		return ok && pd.Leader == pref
	})
	res, err := adm.ElectLeaders(context.Background(), kadm.ElectPreferredReplica, kadm.TopicsSet{"elect": {0: {}}})
	if err != nil || !errors.Is(res["elect"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("second ElectLeaders: %+v %v, want ELECTION_NOT_NEEDED", res["elect"][0], err)
	}
	res, err = adm.ElectLeaders(context.Background(), kadm.ElectLiveReplica, kadm.TopicsSet{"elect": {0: {}}})
	if err != nil || !errors.Is(res["elect"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("unclean ElectLeaders of a partition that has a leader: %+v %v, want ELECTION_NOT_NEEDED", res["elect"][0], err)
	}
}

// With automatic rebalancing, the controller gives the partition back to
// its preferred leader by itself once that one is in sync again.
func TestControllerRebalancesPreferredLeaders(t *testing.T) {
	c := startReplCluster(t, 3, 500*time.Millisecond)
	adm := c.admin(t)
	pref := failOverPreferred(t, c, adm, "rebalanced")
	testenv.Eventually(t, 20*time.Second, "the preferred replica leads again", func() bool {
		pd, ok := partition(t, adm, "rebalanced", 0)
		return ok && pd.Leader == pref
	})
}
