package txn

// What a transaction holds: its partitions (AddPartitionsToTxn, and the
// produce verification that checks them) and its consumer groups with the
// offsets they are to commit.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AddPartitions adds partitions to id's transaction, starting it if
// needed. Each partition's answer is the one code.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, producerID int64, epoch int16, parts []TP) *kerr.Error {
	e, refused := c.lockChecked(ctx, id, producerID, epoch)
	if refused != nil {
		return refused
	}
	defer e.mu.Unlock()
	next := clone(e.m)
	if kerr := c.begin(&next); kerr != nil {
		return kerr
	}
	added := next.state != e.m.state
	np := make(map[TP]bool, len(next.partitions)+len(parts))
	for tp := range next.partitions {
		np[tp] = true
	}
	for _, tp := range parts {
		if !np[tp] {
			np[tp], added = true, true
		}
	}
	if !added {
		return nil
	}
	next.partitions = np
	if err := c.persist(ctx, &next); err != nil {
		return kerr.CoordinatorNotAvailable
	}
	*e.m = next
	return nil
}

// Verify says whether producerID at epoch may write transactional batches
// to tp now: its transaction is open and holds tp (KIP-890's check, made
// by the partition leader before the append).
func (c *Coordinator) Verify(ctx context.Context, id string, producerID int64, epoch int16, tp TP) *kerr.Error {
	e, refused := c.lockChecked(ctx, id, producerID, epoch)
	if refused != nil {
		return refused
	}
	defer e.mu.Unlock()
	if e.m.state != Ongoing || !e.m.partitions[tp] {
		return kerr.InvalidTxnState
	}
	return nil
}

// AddOffsets adds a consumer group to id's transaction (AddOffsetsToTxn).
func (c *Coordinator) AddOffsets(ctx context.Context, id string, producerID int64, epoch int16, group string) *kerr.Error {
	e, refused := c.lockChecked(ctx, id, producerID, epoch)
	if refused != nil {
		return refused
	}
	defer e.mu.Unlock()
	next := clone(e.m)
	if kerr := c.begin(&next); kerr != nil {
		return kerr
	}
	if next.state == e.m.state && next.groups[group] {
		return nil
	}
	ng := map[string]bool{group: true}
	for g := range next.groups {
		ng[g] = true
	}
	next.groups = ng
	if err := c.persist(ctx, &next); err != nil {
		return kerr.CoordinatorNotAvailable
	}
	*e.m = next
	return nil
}

// CommitOffsets records offsets of group in id's transaction
// (TxnOffsetCommit): durable now, visible to the group at the commit.
func (c *Coordinator) CommitOffsets(ctx context.Context, id string, producerID int64, epoch int16, group string, offsets map[TP]Offset) *kerr.Error {
	e, refused := c.lockChecked(ctx, id, producerID, epoch)
	if refused != nil {
		return refused
	}
	defer e.mu.Unlock()
	if e.m.state != Ongoing || !e.m.groups[group] {
		// AddOffsetsToTxn comes first (Kafka's TRANSACTION_COORDINATOR_FENCED
		// family of answers; clients treat this one as abortable).
		return kerr.InvalidTxnState
	}
	next := clone(e.m)
	next.pending = map[string]map[TP]Offset{}
	for g, offs := range e.m.pending {
		next.pending[g] = offs
	}
	merged := map[TP]Offset{}
	for tp, o := range e.m.pending[group] {
		merged[tp] = o
	}
	for tp, o := range offsets {
		merged[tp] = o
	}
	next.pending[group] = merged
	if err := c.persist(ctx, &next); err != nil {
		return kerr.CoordinatorNotAvailable
	}
	*e.m = next
	return nil
}

// WithVerified runs appendFn, the append of producerID's transactional
// batch to tp, if its transaction is open and holds tp, holding the
// transaction still meanwhile: its end (and the markers) waits until the
// batch is in the log, so no batch of a transaction lands after the
// marker that ended it and leaves a transaction open that nobody knows.
func (c *Coordinator) WithVerified(ctx context.Context, id string, producerID int64, epoch int16, tp TP, appendFn func()) *kerr.Error {
	e, refused := c.lockChecked(ctx, id, producerID, epoch)
	if refused != nil {
		return refused
	}
	defer e.mu.Unlock()
	if e.m.state != Ongoing || !e.m.partitions[tp] {
		return kerr.InvalidTxnState
	}
	appendFn()
	return nil
}

// lockChecked returns id's entry, locked, once producerID at epoch is its
// current producer (check): the start of every call a transactional
// producer makes. The caller unlocks it.
func (c *Coordinator) lockChecked(ctx context.Context, id string, producerID int64, epoch int16) (*entry, *kerr.Error) {
	e, err := c.lookup(ctx, id, false)
	if err != nil {
		return nil, kerr.CoordinatorLoadInProgress
	}
	if e == nil {
		return nil, kerr.InvalidProducerIDMapping
	}
	if kerr := check(e.m, producerID, epoch); kerr != nil {
		e.mu.Unlock()
		return nil, kerr
	}
	return e, nil
}
