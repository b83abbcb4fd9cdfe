package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A transaction's consumer offsets commit when its transactional id and
// its group have different coordinators: TxnOffsetCommit goes to the
// group's coordinator (as Java, kgo and librdkafka send it), which
// forwards the offsets to the id's coordinator; they reach the group with
// the commit, not before, and a consumer asking for stable offsets is
// told to wait until then. (Each broker once sent the client to the other
// with NOT_COORDINATOR, so Kafka Streams' exactly_once_v2 timed out on its
// first commit on a cluster.)
func TestTxnOffsetCommitAtTheGroupsCoordinator(t *testing.T) {
	_, brokers := testenv.StartCluster(t, 2, testenv.WithConfig(func(c *broker.Config) {
		c.Transactions.Partitions = 1
	}))
	cl := newClientOpts(t, kgo.SeedBrokers(brokers[0].Addr, brokers[1].Addr))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testenv.Eventually(t, 20*time.Second, "creating the topic", func() bool {
		resp, err := adm.CreateTopic(ctx, 1, 1, nil, "consumed")
		err = errors.Join(err, resp.Err)
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists)
	})
	const id = "offsets-elsewhere"
	send := func(to int32, req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := cl.Broker(int(to)).Request(ctx, req)
		if err != nil {
			t.Fatalf("%T to broker %d: %v", req, to, err)
		}
		return resp
	}

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	var ir *kmsg.InitProducerIDResponse
	var txnCoord int32
	testenv.Eventually(t, 20*time.Second, "InitProducerId once the state partition is led", func() bool {
		txnCoord = findCoordinatorNode(t, cl, kmsg.FindCoordinatorRequest{CoordinatorType: 1, CoordinatorKey: id})
		ir = send(txnCoord, init).(*kmsg.InitProducerIDResponse)
		return ir.ErrorCode != kerr.CoordinatorLoadInProgress.Code && ir.ErrorCode != kerr.NotCoordinator.Code
	})
	wantCode(t, "InitProducerId", ir.ErrorCode, nil)
	var group string
	var groupCoord int32
	for i := 0; groupCoord == 0 || groupCoord == txnCoord; i++ {
		group = fmt.Sprintf("group-%d", i)
		groupCoord = findCoordinatorNode(t, cl, kmsg.FindCoordinatorRequest{CoordinatorKey: group})
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, ir.ProducerID, ir.ProducerEpoch, group
	wantCode(t, "AddOffsetsToTxn", send(txnCoord, add).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)

	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = id, group, ir.ProducerID, ir.ProducerEpoch
	commit.Generation = -1
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset = 0, 42
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "consumed", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{tp}}}
	cr := send(groupCoord, commit).(*kmsg.TxnOffsetCommitResponse)
	wantCode(t, "TxnOffsetCommit at the group's coordinator", cr.Topics[0].Partitions[0].ErrorCode, nil)

	fetched := func() int64 {
		t.Helper()
		offsets, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := offsets.Lookup("consumed", 0); ok {
			return o.At
		}
		return -1
	}
	if at := fetched(); at != -1 {
		t.Fatalf("the group's offset is %d before the transaction committed, want none", at)
	}
	// A consumer asking for stable offsets (KIP-447: every Java and kgo
	// consumer) is told to wait while the transaction is open.
	stable := func() (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = true
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "consumed", Partitions: []int32{0}}}
		req.Groups = append(req.Groups, rg)
		p := send(groupCoord, req).(*kmsg.OffsetFetchResponse).Groups[0].Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	if _, code := stable(); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("OffsetFetch with RequireStable while the transaction is open: error %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
	wantCode(t, "EndTxn", send(txnCoord, end).(*kmsg.EndTxnResponse).ErrorCode, nil)
	if at := fetched(); at != 42 {
		t.Fatalf("the group's offset is %d after the commit, want 42", at)
	}
	if at, code := stable(); code != 0 || at != 42 {
		t.Fatalf("OffsetFetch with RequireStable after the commit: %d, error %v, want 42", at, kerr.ErrorForCode(code))
	}
}

// findCoordinatorNode asks FindCoordinator, retrying while the coordinator is
// not yet known.
func findCoordinatorNode(t *testing.T, cl *kgo.Client, req kmsg.FindCoordinatorRequest) int32 {
	t.Helper()
	var node int32
	testenv.Eventually(t, 20*time.Second, "FindCoordinator "+req.CoordinatorKey, func() bool {
		r := req
		r.Version = 3
		resp, err := r.RequestWith(context.Background(), cl)
		if err != nil || resp.ErrorCode != 0 {
			return false
		}
		node = resp.NodeID
		return true
	})
	return node
}
