package broker_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

func initProducerID(t *testing.T, w *wire, id int64, epoch int16) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	req.ProducerID, req.ProducerEpoch = id, epoch
	resp := w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	wantCode(t, "InitProducerId", resp.ErrorCode, nil)
	return resp.ProducerID, resp.ProducerEpoch
}

// An attacker who takes an id and writes batch 0 for the ids that follow
// it, as the next producers would get them from a counter, must not hide
// the next producer's first record: before, the real batch 0 was
// acknowledged as a duplicate at the forged record's offset and its record
// was never stored.
func TestProducerIDForgeryCannotHideTheNextProducersRecord(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "victim", 1, nil)
	w := dial(t, b.Addr)
	own, _ := initProducerID(t, w, -1, -1)
	for guess := own + 1; guess <= own+20; guess++ {
		r := produceResult(w.roundTrip(produceRequest(9, -1, "victim", 0, makeBatch(guess, 0, 0, "forged"))))
		wantCode(t, "forged batch", r.ErrorCode, nil)
	}
	cl := newClient(t, b.Addr, kgo.DefaultProduceTopic("victim"))
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("real")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := listLatest(t, w, "victim", 0); got != 21 {
		t.Fatalf("log end %d after 20 forged records and the producer's own, want 21: its acknowledged record was taken for a duplicate of a forged one", got)
	}
	// The ids themselves follow no visible order.
	a, _ := initProducerID(t, w, -1, -1)
	c, _ := initProducerID(t, w, -1, -1)
	if c == a+1 || a == own+1 {
		t.Errorf("consecutive ids %d, %d, %d: guessable", own, a, c)
	}
}

// InitProducerId naming an existing id and epoch, without a transactional
// id, hands out a new id (as Kafka does): before, it bumped the named
// id's epoch, so anyone could fence a stranger's producer.
func TestProducerIDInitNamingAnotherIDGetsANewOne(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "fenced", 1, nil)
	owner, attacker := dial(t, b.Addr), dial(t, b.Addr)
	id, epoch := initProducerID(t, owner, -1, -1)
	got, gotEpoch := initProducerID(t, attacker, id, epoch)
	if got == id {
		t.Fatalf("InitProducerId naming id %d epoch %d answered the same id, epoch %d: a stranger's producer fenced", id, epoch, gotEpoch)
	}
	r := produceResult(owner.roundTrip(produceRequest(9, -1, "fenced", 0, makeBatch(id, epoch, 0, "mine"))))
	wantCode(t, "the owner's batch after the attempt", r.ErrorCode, nil)
}

// A batch carrying a producer id handed to another principal is refused
// with INVALID_PRODUCER_ID_MAPPING, and writes nothing; the owner's own
// batch is stored.
func TestProducerIDOfAnotherPrincipalIsRefused(t *testing.T) {
	dir := t.TempDir()
	setUser(t, dir, "alice", "SCRAM-SHA-256", "alice-secret")
	setUser(t, dir, "mallory", "SCRAM-SHA-256", "mallory-secret")
	_, addrs := startListeners(t, func(c *broker.Config) { c.DataDir = dir }, broker.SASLPlaintext)
	addr := addrs[broker.SASLPlaintext]
	ctx := context.Background()
	alice := newClient(t, addr, kgo.SASL(mechanisms("alice", "alice-secret")["SCRAM-SHA-256"]))
	mallory := newClient(t, addr, kgo.SASL(mechanisms("mallory", "mallory-secret")["SCRAM-SHA-256"]))
	ir, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, alice)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("alice's InitProducerId: %v %d", err, ir.ErrorCode)
	}
	produce := func(cl *kgo.Client, value string) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		resp, err := produceRequest(9, -1, "shared", 0, makeBatch(ir.ProducerID, ir.ProducerEpoch, 0, value)).RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return produceResult(resp)
	}
	// Create the topic first, so the refusal is about the id only.
	if resp, err := kadm.NewClient(alice).CreateTopic(ctx, 1, 1, nil, "shared"); err != nil || resp.Err != nil {
		t.Fatalf("creating the topic: %v %v", err, resp.Err)
	}
	forged := produce(mallory, "forged")
	wantCode(t, "mallory's batch with alice's id", forged.ErrorCode, kerr.InvalidProducerIDMapping)
	real := produce(alice, "real")
	wantCode(t, "alice's batch 0", real.ErrorCode, nil)
	if real.BaseOffset != 0 {
		t.Errorf("alice's batch 0 stored at offset %d, want 0: nothing of mallory's was written", real.BaseOffset)
	}
}
