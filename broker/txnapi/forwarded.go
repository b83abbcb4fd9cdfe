package txnapi

// Offsets this broker, as a group's coordinator, forwarded to another
// broker's transaction coordinator (txnoffsetcommit.go), remembered so that
// OffsetFetch with RequireStable (KIP-447) sees them while their
// transaction is unfinished: otherwise a consumer taking a partition over
// from a paused member could start from the offset that member's
// transaction is about to replace, and count its records twice.
//
// Each entry names the transaction by its id, producer id and start time,
// as the coordinator reported them right after the forward (the same
// clock, so no skew between brokers): with transaction version 1 the epoch
// stays the same from one transaction to the next, and only the start time
// tells the transaction that holds the offsets from a later one. An entry
// goes once its transaction is found finished; a partition holds at most
// one (the latest forward). Entries of groups nobody fetches would stay,
// so at most maxForwarded are kept: past it a forward is not remembered
// (logged), and RequireStable falls back to what this broker coordinates.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/txn"
)

type forwardedTxns struct {
	mu      sync.Mutex
	m       map[string]map[txn.TP]forwardedTxn // by group
	n       int                                // entries in m
	skipped time.Time                          // when a forward was last not remembered (full)
}

// maxForwarded bounds the entries kept (about 100 bytes each).
const maxForwarded = 100_000

// forwardedTxn is the transaction whose coordinator holds a partition's
// offsets.
type forwardedTxn struct {
	id    string
	pid   int64
	start int64 // the coordinator's start time of the transaction, ms
}

// describeRemoteTxn asks the broker coordinating id for its state.
func (h *Handlers) describeRemoteTxn(ctx context.Context, id string) (kmsg.DescribeTransactionsResponseTransactionState, error) {
	coord, ok := h.txnCoordinator(id)
	if !ok {
		return kmsg.DescribeTransactionsResponseTransactionState{}, kerr.CoordinatorNotAvailable
	}
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := h.peers(coord.ID, req, resp, timeout); err != nil {
		return kmsg.DescribeTransactionsResponseTransactionState{}, err
	}
	if len(resp.TransactionStates) != 1 {
		return kmsg.DescribeTransactionsResponseTransactionState{}, kerr.UnknownServerError
	}
	st := resp.TransactionStates[0]
	return st, kerr.ErrorForCode(st.ErrorCode)
}

// unfinished reports whether st is a transaction not yet complete.
func unfinished(st kmsg.DescribeTransactionsResponseTransactionState) bool {
	switch st.State {
	case "Ongoing", "PrepareCommit", "PrepareAbort":
		return true
	}
	return false
}

// rememberForwarded notes that the transaction of r now holds the offsets
// of tps, once its coordinator says which transaction that is.
func (h *Handlers) rememberForwarded(ctx context.Context, r *kmsg.TxnOffsetCommitRequest, tps []txn.TP) {
	st, err := h.describeRemoteTxn(ctx, r.TransactionalID)
	if err != nil || st.ProducerID != r.ProducerID || !unfinished(st) {
		// Finished already (nothing to wait for), or unknown: then the
		// forget below at least leaves no older entry in its place.
		h.forgetForwarded(r.Group, tps)
		if err != nil {
			h.logger.Warn("describing a transaction whose offsets were forwarded", "transactional_id", r.TransactionalID, "err", err)
		}
		return
	}
	if kept := h.fwd.add(r.Group, tps, forwardedTxn{id: r.TransactionalID, pid: r.ProducerID, start: st.StartTimestamp}); !kept {
		f := &h.fwd
		f.mu.Lock()
		defer f.mu.Unlock()
		if time.Since(f.skipped) > time.Minute {
			f.skipped = time.Now()
			h.logger.Warn("too many forwarded transactional offsets remembered; RequireStable fetches may not wait for this transaction",
				"group", r.Group, "transactional_id", r.TransactionalID, "kept", f.n)
		}
	}
}

// add remembers ft for group's tps, replacing what they held; it reports
// false if some were not remembered because maxForwarded are kept.
func (f *forwardedTxns) add(group string, tps []txn.TP, ft forwardedTxn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]map[txn.TP]forwardedTxn{}
	}
	g := f.m[group]
	if g == nil {
		g = map[txn.TP]forwardedTxn{}
		f.m[group] = g
	}
	kept := true
	for _, tp := range tps {
		if _, ok := g[tp]; !ok {
			if f.n >= maxForwarded {
				kept = false
				continue
			}
			f.n++
		}
		g[tp] = ft
	}
	if len(g) == 0 {
		delete(f.m, group)
	}
	return kept
}

func (h *Handlers) forgetForwarded(group string, tps []txn.TP) {
	f := &h.fwd
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tp := range tps {
		f.dropLocked(group, tp)
	}
}

// dropLocked removes group's entry for tp, if any; call with mu held.
func (f *forwardedTxns) dropLocked(group string, tp txn.TP) {
	g := f.m[group]
	if _, ok := g[tp]; !ok {
		return
	}
	delete(g, tp)
	f.n--
	if len(g) == 0 {
		delete(f.m, group)
	}
}

// PendingOffsets returns the partitions of the group name whose offsets an
// unfinished transaction holds (groupapi.Config.PendingTxnOffsets), for
// OffsetFetch with RequireStable (v7+, KIP-447): such a partition gets
// UNSTABLE_OFFSET_COMMIT, which clients retry, instead of the offset the
// commit is about to replace. Transactions this broker coordinates are
// seen directly (all of them on a standalone broker); those of other
// brokers through the offsets this broker, the group's coordinator,
// forwarded to them (ForwardedPending).
func (h *Handlers) PendingOffsets(name string) map[group.TopicPartition]bool {
	if _, ok := h.meta.Topic(txn.StateTopic); !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pending map[group.TopicPartition]bool
	mark := func(tp txn.TP) {
		if pending == nil {
			pending = map[group.TopicPartition]bool{}
		}
		pending[group.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}] = true
	}
	for tp := range h.txns.PendingOffsets(ctx, name) {
		mark(tp)
	}
	for tp := range h.ForwardedPending(ctx, name) {
		mark(tp)
	}
	return pending
}

// ForwardedPending returns the partitions of group whose forwarded offsets
// belong to a transaction still unfinished, asking each transaction's
// coordinator; a coordinator that cannot answer counts as unfinished
// (clients retry UNSTABLE_OFFSET_COMMIT). Entries of finished
// transactions are dropped.
func (h *Handlers) ForwardedPending(ctx context.Context, group string) map[txn.TP]bool {
	f := &h.fwd
	f.mu.Lock()
	byTxn := map[forwardedTxn][]txn.TP{}
	for tp, ft := range f.m[group] {
		byTxn[ft] = append(byTxn[ft], tp)
	}
	f.mu.Unlock()
	var pending map[txn.TP]bool
	for ft, tps := range byTxn {
		st, err := h.describeRemoteTxn(ctx, ft.id)
		if err == nil && (st.ProducerID != ft.pid || st.StartTimestamp != ft.start || !unfinished(st)) {
			f.mu.Lock()
			for _, tp := range tps {
				if cur, ok := f.m[group][tp]; ok && cur == ft {
					f.dropLocked(group, tp)
				}
			}
			f.mu.Unlock()
			continue
		}
		if pending == nil {
			pending = map[txn.TP]bool{}
		}
		for _, tp := range tps {
			pending[tp] = true
		}
	}
	return pending
}
