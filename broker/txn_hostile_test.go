package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/recordbatch"
	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// rawTxnBatch is a transactional batch of one record from producer pid.
func rawTxnBatch(pid int64, epoch int16, seq int32, control bool) []byte {
	if control {
		return recordbatch.MarkerBatch(pid, epoch, true, 0, 1000)
	}
	rb := kmsg.RecordBatch{Magic: 2, Attributes: recordbatch.AttrTransactional, FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: 1, Records: rbtest.Record(0, nil, []byte("x"))}
	return rbtest.FixBatch(rb.AppendTo(nil))
}

func rawTxnProduce(w *wire, id *string, topic string, batch []byte) int16 {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return w.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// Clients lying about transactions are refused and change nothing: a
// transactional batch for a partition the transaction never added, epochs
// older or newer than the coordinator's, a batch without the request's
// transactional id, a client's own markers and WriteTxnMarkers.
func TestTransactionsRefuseHostileClients(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "hostile", 1, nil)
	w := dial(t, b.Addr)
	id := "hostile-id"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(4)
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 60000
	ir := w.roundTrip(init).(*kmsg.InitProducerIDResponse)
	wantCode(t, "InitProducerId", ir.ErrorCode, nil)
	pid, epoch := ir.ProducerID, ir.ProducerEpoch

	wantCode(t, "transactional produce before AddPartitionsToTxn",
		rawTxnProduce(w, &id, "hostile", rawTxnBatch(pid, epoch, 0, false)), kerr.InvalidTxnState)

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.SetVersion(3)
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "hostile", Partitions: []int32{0}}}
	wantCode(t, "AddPartitionsToTxn", w.roundTrip(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode, nil)

	wantCode(t, "a newer epoch than the coordinator's",
		rawTxnProduce(w, &id, "hostile", rawTxnBatch(pid, epoch+1, 0, false)), kerr.InvalidProducerEpoch)
	wantCode(t, "a transactional batch without the transactional id",
		rawTxnProduce(w, nil, "hostile", rawTxnBatch(pid, epoch, 0, false)), kerr.InvalidRecord)
	wantCode(t, "a client's commit marker",
		rawTxnProduce(w, &id, "hostile", rawTxnBatch(pid, epoch, 0, true)), kerr.InvalidRecord)
	wantCode(t, "the transaction's own batch", rawTxnProduce(w, &id, "hostile", rawTxnBatch(pid, epoch, 0, false)), nil)

	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	markers.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, true
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "hostile", Partitions: []int32{0}}}
	markers.Markers = append(markers.Markers, m)
	wantCode(t, "WriteTxnMarkers from a client", w.roundTrip(markers).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode,
		kerr.ClusterAuthorizationFailed)

	// The transaction is still open: nothing above decided it.
	adm := kadm.NewClient(newClient(t, b.Addr))
	ctx := context.Background()
	stable, err := adm.ListCommittedOffsets(ctx, "hostile")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := stable.Lookup("hostile", 0); o.Offset != 0 {
		t.Fatalf("last stable offset %d after the refused requests, want 0 (the transaction is open)", o.Offset)
	}

	// A new instance fences this one: its epoch is now old.
	ir = w.roundTrip(init).(*kmsg.InitProducerIDResponse)
	wantCode(t, "InitProducerId again", ir.ErrorCode, nil)
	if ir.ProducerID != pid || ir.ProducerEpoch <= epoch {
		t.Fatalf("InitProducerId again gave producer %d epoch %d, want %d with an epoch above %d", ir.ProducerID, ir.ProducerEpoch, pid, epoch)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(3)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
	wantCode(t, "EndTxn of the fenced epoch", w.roundTrip(end).(*kmsg.EndTxnResponse).ErrorCode, kerr.ProducerFenced)
	wantCode(t, "a batch of the fenced epoch",
		rawTxnProduce(w, &id, "hostile", rawTxnBatch(pid, epoch, 1, false)), kerr.ProducerFenced)
	stable, err = adm.ListCommittedOffsets(ctx, "hostile")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := stable.Lookup("hostile", 0); o.Offset != 2 {
		t.Fatalf("last stable offset %d once the fenced transaction was aborted, want 2 (its record and the abort marker)", o.Offset)
	}
}

// KIP-360: a producer whose transaction the coordinator aborted for its
// timeout recovers with InitProducerId naming its id and old epoch; one
// fenced by a new instance of its transactional id cannot.
func TestTransactionTimeoutRecoveryAndFencing(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.Transactions.CheckInterval = 20 * time.Millisecond
	}))
	createTopic(t, b.Addr, "recover", 1, nil)
	w := dial(t, b.Addr)
	id := "recovering"
	initPID := func(pid int64, epoch int16) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(4)
		req.TransactionalID, req.TransactionTimeoutMillis = &id, 1000
		req.ProducerID, req.ProducerEpoch = pid, epoch
		return w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	}
	open := func(pid int64, epoch int16) {
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.SetVersion(3)
		add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
		add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "recover", Partitions: []int32{0}}}
		wantCode(t, "AddPartitionsToTxn", w.roundTrip(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode, nil)
	}
	first := initPID(-1, -1)
	pid, epoch := first.ProducerID, first.ProducerEpoch
	open(pid, epoch)
	adm := kadm.NewClient(newClient(t, b.Addr))
	testenv.Eventuallyf(t, 20*time.Second, func() (bool, string) {
		d, err := adm.DescribeTransactions(context.Background(), id)
		if err != nil {
			return false, err.Error()
		}
		return d[id].State == "CompleteAbort", "state " + d[id].State
	})
	rec := initPID(pid, epoch)
	wantCode(t, "InitProducerId naming the epoch the timeout aborted", rec.ErrorCode, nil)
	if rec.ProducerID != pid || rec.ProducerEpoch != epoch+2 {
		t.Fatalf("recovered as producer %d epoch %d, want %d epoch %d", rec.ProducerID, rec.ProducerEpoch, pid, epoch+2)
	}

	open(pid, rec.ProducerEpoch)
	fresh := initPID(-1, -1) // a new instance fences the open transaction's
	wantCode(t, "a new instance", fresh.ErrorCode, nil)
	wantCode(t, "the fenced instance naming its epoch", initPID(pid, rec.ProducerEpoch).ErrorCode, kerr.ProducerFenced)
}

// A transactional batch before any transaction existed is refused, and
// does not create the transaction state topic.
func TestTransactionalBatchWithoutAnyTransaction(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "early", 1, nil)
	w := dial(t, b.Addr)
	id := "never-initialised"
	wantCode(t, "a transactional batch out of nowhere", rawTxnProduce(w, &id, "early", rawTxnBatch(12345, 0, 0, false)), kerr.InvalidProducerIDMapping)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(7)
	for _, t0 := range w.roundTrip(md).(*kmsg.MetadataResponse).Topics {
		if t0.Topic != nil && *t0.Topic == "__transaction_state" {
			t.Fatal("the refused batch created the transaction state topic")
		}
	}
}

// An id idle past --transactional-id-expiration is forgotten (a tombstone
// in __transaction_state): DescribeTransactions no longer finds it, and
// its next producer gets a new producer id.
func TestTransactionalIDExpires(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.Transactions.CheckInterval = 20 * time.Millisecond
		c.Transactions.IDExpiration = 500 * time.Millisecond
	}))
	w := dial(t, b.Addr)
	id := "expiring"
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
	first := w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	wantCode(t, "InitProducerId", first.ErrorCode, nil)
	describe := kmsg.NewPtrDescribeTransactionsRequest()
	describe.TransactionalIDs = []string{id}
	testenv.Eventually(t, 20*time.Second, "the idle id forgotten", func() bool {
		return w.roundTrip(describe).(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode == kerr.TransactionalIDNotFound.Code
	})
	again := w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	wantCode(t, "InitProducerId after expiry", again.ErrorCode, nil)
	if again.ProducerID == first.ProducerID {
		t.Fatalf("the expired id kept its producer id %d", first.ProducerID)
	}
}

// Offsets sent with TxnOffsetCommit are invisible to the group until the
// commit, survive a restart of the broker in between (they are in the
// transaction's state), and are the group's once it commits.
func TestTxnOffsetsVisibleOnlyOnCommit(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	addr := b.Addr
	createTopic(t, addr, "consumed", 1, nil)
	w := dial(t, addr)
	id := "offsets"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(4)
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 60000
	ir := w.roundTrip(init).(*kmsg.InitProducerIDResponse)
	wantCode(t, "InitProducerId", ir.ErrorCode, nil)
	addOffsets := kmsg.NewPtrAddOffsetsToTxnRequest()
	addOffsets.SetVersion(3)
	addOffsets.TransactionalID, addOffsets.ProducerID, addOffsets.ProducerEpoch, addOffsets.Group = id, ir.ProducerID, ir.ProducerEpoch, "reader"
	wantCode(t, "AddOffsetsToTxn", w.roundTrip(addOffsets).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.SetVersion(3)
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch, commit.Generation = id, "reader", ir.ProducerID, ir.ProducerEpoch, -1
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "consumed", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42, LeaderEpoch: -1}}}}
	wantCode(t, "TxnOffsetCommit", w.roundTrip(commit).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)

	offset := func(addr string) int64 {
		t.Helper()
		resp := committed(t, addr, "reader")
		o, ok := resp.Lookup("consumed", 0)
		if !ok {
			return -1
		}
		return o.At
	}
	if o := offset(addr); o != -1 {
		t.Fatalf("before the commit the group's offset is %d, want none", o)
	}
	b.Stop()
	testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithAddr(addr))
	if o := offset(addr); o != -1 {
		t.Fatalf("after a restart, before the commit, the group's offset is %d, want none", o)
	}
	w = dial(t, addr)
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(3)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
	wantCode(t, "EndTxn after the restart", w.roundTrip(end).(*kmsg.EndTxnResponse).ErrorCode, nil)
	if o := offset(addr); o != 42 {
		t.Fatalf("after the commit the group's offset is %d, want 42", o)
	}
}
