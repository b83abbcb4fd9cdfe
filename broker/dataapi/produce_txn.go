package dataapi

// Transactional produce: a batch with the transactional bit is appended
// only while its producer's transaction is open and holds the partition,
// as the coordinator says (KIP-890's verification, made for every
// client). When this broker coordinates the id, the check and the append
// happen under the transaction's lock, so the transaction cannot end
// between them; another broker's coordinator is asked with
// AddPartitionsToTxn v4 (VerifyOnly) first (Config.Txns: broker/txnbackend's
// verify.go).

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/internal/recordbatch"
)

// transactionalAppend runs appendFn for a partition's records unless they
// hold a transactional batch the coordinator does not vouch for, and
// returns the refusal otherwise. appendFn gets the guard taken before the
// coordinator was asked: the log refuses the batch if the transaction
// ended meanwhile (log/txn_guard.go).
func (h *Handlers) transactionalAppend(txnID *string, topic string, p int32, l *log.Log, records []byte, appendFn func(log.TxnGuard)) (int16, string) {
	pid, epoch, found, mixed := transactionalProducer(records)
	switch {
	case !found:
		appendFn(log.TxnGuard{})
		return 0, ""
	case mixed:
		return kerr.InvalidRecord.Code, "a partition's batches name more than one transactional producer or epoch"
	case txnID == nil:
		return kerr.InvalidRecord.Code, "transactional batches need the request's transactional id"
	}
	if _, code := h.topics.Lookup(txn.StateTopic, false); code != 0 {
		// No transaction was ever begun: nothing to vouch for the batch
		// (and a client does not get to create the state topic this way).
		return kerr.InvalidProducerIDMapping.Code, fmt.Sprintf("transactional id %q has no producer id: call InitProducerId first", *txnID)
	}
	tp := txn.TP{Topic: topic, Partition: p}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	guard := l.GuardTxn(pid)
	if h.txns.Refusal(*txnID) == 0 {
		if err := h.txns.Coordinator.WithVerified(ctx, *txnID, pid, epoch, tp, func() { appendFn(guard) }); err != nil {
			return err.Code, fmt.Sprintf("transactional id %q: producer %d epoch %d has no open transaction holding %s[%d] (AddPartitionsToTxn first): %s",
				*txnID, pid, epoch, topic, p, err.Message)
		}
		return 0, ""
	}
	if code := h.txns.VerifyRemote(ctx, *txnID, pid, epoch, tp); code != 0 {
		return code, fmt.Sprintf("transactional id %q: its coordinator does not vouch for producer %d epoch %d writing %s[%d]", *txnID, pid, epoch, topic, p)
	}
	appendFn(guard)
	return 0, ""
}

// transactionalProducer finds the producer of the transactional batches
// in records; mixed when they disagree.
func transactionalProducer(records []byte) (pid int64, epoch int16, found, mixed bool) {
	for len(records) >= recordbatch.HeaderSize {
		size := int64(int32(binary.BigEndian.Uint32(records[recordbatch.OffLength:]))) + recordbatch.LengthPrefix
		if size < recordbatch.HeaderSize || size > int64(len(records)) {
			return // appendBatches refuses the framing
		}
		// Only the attributes on the way: every produce passes here.
		if records[recordbatch.OffMagic] == 2 && records[recordbatch.OffAttributes+1]&recordbatch.AttrTransactional != 0 {
			h := recordbatch.ParseHeader(records)
			if found && (h.ProducerID != pid || h.ProducerEpoch != epoch) {
				mixed = true
			}
			pid, epoch, found = h.ProducerID, h.ProducerEpoch, true
		}
		records = records[size:]
	}
	return
}
