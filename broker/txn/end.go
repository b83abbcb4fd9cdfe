package txn

// Ending a transaction: the decision made durable (Prepare*), markers and
// offsets written, then Complete*; and the abort that fences a producer.

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// EndTxn commits or aborts id's transaction: the decision is made durable
// (Prepare*), then markers and offsets are written and the transaction
// completes. A retry of an end already done is answered with success.
func (c *Coordinator) EndTxn(ctx context.Context, id string, producerID int64, epoch int16, commit bool) *kerr.Error {
	e, refused := c.lockChecked(ctx, id, producerID, epoch)
	if refused != nil {
		return refused
	}
	defer e.mu.Unlock()
	m := e.m
	want := PrepareAbort
	if commit {
		want = PrepareCommit
	}
	switch m.state {
	case Ongoing:
	case want, completed(want): // retried: prepared or completed as asked
		if m.state == want {
			if err := c.complete(ctx, m); err != nil {
				return kerr.ConcurrentTransactions
			}
		}
		return nil
	case Empty:
		if !commit {
			return nil // nothing was sent: an abort has nothing to undo
		}
		return kerr.InvalidTxnState
	default:
		return kerr.InvalidTxnState
	}
	next := clone(m)
	next.state = want
	if err := c.persist(ctx, &next); err != nil {
		return kerr.CoordinatorNotAvailable
	}
	*m = next
	if err := c.complete(ctx, m); err != nil {
		// Decided and durable: the background check completes it.
		c.log.Warn("transaction decided but not yet completed; retrying in the background",
			"transactional_id", id, "state", m.state.String(), "err", err)
	}
	return nil
}

// complete carries out a decided transaction: markers, then (for a
// commit) the offsets, then the Complete state.
func (c *Coordinator) complete(ctx context.Context, m *meta) error {
	commit := m.state == PrepareCommit
	coordEpoch, err := c.coordinatorEpoch(ctx, m.id)
	if err != nil {
		return err
	}
	if parts := m.unmarked(); len(parts) > 0 {
		failed, err := c.be.WriteMarkers(ctx, m.producerID, m.epoch, commit, coordEpoch, parts)
		m.markWritten(parts, failed, err)
		if err != nil {
			return fmt.Errorf("writing markers: %w", err)
		}
	}
	if commit {
		for g, offs := range m.pending {
			if len(offs) == 0 {
				continue
			}
			if err := c.be.CommitOffsets(ctx, g, offs); err != nil {
				return fmt.Errorf("committing offsets of group %s: %w", g, err)
			}
		}
	}
	next := clone(m)
	next.state = CompleteAbort
	if commit {
		next.state = CompleteCommit
	}
	next.resetTxn()
	next.start = time.Time{}
	if err := c.persist(ctx, &next); err != nil {
		return err
	}
	*m = next
	return nil
}

// fenceAndAbort aborts m's open transaction at a bumped epoch, so that
// the instance that opened it is fenced in every partition it wrote.
func (c *Coordinator) fenceAndAbort(ctx context.Context, m *meta, why string) error {
	next := clone(m)
	next.state = PrepareAbort
	if next.epoch < math.MaxInt16-1 {
		next.prevEpoch = next.epoch
		next.epoch++
	}
	if err := c.persist(ctx, &next); err != nil {
		return err
	}
	*m = next
	c.log.Info("aborting an open transaction", "transactional_id", m.id, "producer_id", m.producerID, "epoch", m.epoch, "why", why)
	return c.complete(ctx, m)
}

// completed is the state a prepared one ends in.
func completed(prepared State) State {
	if prepared == PrepareCommit {
		return CompleteCommit
	}
	return CompleteAbort
}
