package broker_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestOffsetsSurviveRestartStandalone: committed offsets are in the data
// directory, and a restarted broker serves them.
func TestOffsetsSurviveRestartStandalone(t *testing.T) {
	dir := t.TempDir()
	b := startGroupBroker(t, testenv.WithDataDir(dir))
	createTopic(t, b.Addr, "payments", 3, nil)
	want := map[int32]int64{0: 11, 1: 22, 2: 33}
	commitOffsets(t, b.Addr, "billing", "payments", want)
	b.Stop()
	b = startGroupBroker(t, testenv.WithDataDir(dir))
	wantOffsets(t, committed(t, b.Addr, "billing"), "payments", want)
}

// zkBroker starts a cluster member. Its committed offsets go to ZooKeeper's
// offset registry through the session its cluster metadata lends.
func zkBroker(t *testing.T, connect string, id int32) *testenv.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logger := slog.New(slog.DiscardHandler)
	return testenv.StartBroker(t,
		testenv.WithMetadata(func(self cluster.Broker) (cluster.Metadata, error) {
			self.ID = id
			return cluster.JoinZooKeeper(ctx, connect, self, logger)
		}),
		testenv.WithConfig(fastGroups))
}

// knowsTopic reports whether the broker at addr describes topic in Metadata.
func knowsTopic(t *testing.T, addr, topic string) bool {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	resp := dial(t, addr).roundTrip(req).(*kmsg.MetadataResponse)
	return len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0
}

// coordinatorOf asks a broker which broker coordinates a group.
func coordinatorOf(t *testing.T, addr, groupName string) int32 {
	t.Helper()
	w := dial(t, addr)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(4)
	req.CoordinatorKeys = []string{groupName}
	c := w.roundTrip(req).(*kmsg.FindCoordinatorResponse).Coordinators[0]
	if c.ErrorCode != 0 {
		t.Fatalf("FindCoordinator %s: %v", groupName, kerr.ErrorForCode(c.ErrorCode))
	}
	return c.NodeID
}

// TestOffsetsFollowCoordinatorInCluster: in a two-broker cluster a group's
// offsets go to ZooKeeper's offset registry (in the paper's format); the
// other broker refuses the group with NOT_COORDINATOR; when the coordinator
// stops, the survivor takes the group over with its committed offsets, and
// a broker started after both are gone still serves them.
func TestOffsetsFollowCoordinatorInCluster(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	brokers := map[int32]*testenv.Broker{1: zkBroker(t, connect, 1), 2: zkBroker(t, connect, 2)}
	createTopic(t, brokers[1].Addr, "ledger", 4, nil)
	testenv.Eventually(t, 10*time.Second, "both brokers in each other's view", func() bool {
		return coordinatorOf(t, brokers[1].Addr, "x") == coordinatorOf(t, brokers[2].Addr, "x")
	})
	// The other broker learns of the topic through its ZooKeeper watch.
	testenv.Eventually(t, 10*time.Second, "the topic in both brokers' views", func() bool {
		return knowsTopic(t, brokers[1].Addr, "ledger") && knowsTopic(t, brokers[2].Addr, "ledger")
	})

	const groupName = "reconciler"
	coord := coordinatorOf(t, brokers[1].Addr, groupName)
	other := 3 - coord
	want := map[int32]int64{0: 5, 1: 6, 2: 7, 3: 8}
	commitOffsets(t, brokers[other].Addr, groupName, "ledger", want)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := cluster.DialZooKeeper(ctx, connect, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	zkData, _, err := sess.Conn.Get(sess.Paths.Offset(groupName, "ledger", 2))
	if err != nil || string(zkData) != "7" {
		t.Fatalf("offset registry holds %q, want the decimal offset 7", zkData)
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.SetVersion(8)
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = groupName
	fetch.Groups = append(fetch.Groups, rg)
	resp := dial(t, brokers[other].Addr).roundTrip(fetch).(*kmsg.OffsetFetchResponse)
	wantCode(t, "OffsetFetch at the other broker", resp.Groups[0].ErrorCode, kerr.NotCoordinator)

	brokers[coord].Stop()
	testenv.Eventually(t, 10*time.Second, "the survivor coordinating the group", func() bool {
		return coordinatorOf(t, brokers[other].Addr, groupName) == other
	})
	wantOffsets(t, committed(t, brokers[other].Addr, groupName), "ledger", want)

	// The whole cluster restarts, on fresh disks: the offsets were never
	// anywhere but in ZooKeeper.
	brokers[other].Stop()
	fresh := zkBroker(t, connect, 3)
	wantOffsets(t, committed(t, fresh.Addr, groupName), "ledger", want)
}
