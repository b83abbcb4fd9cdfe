package txn

import (
	"context"
	"slices"
	"time"
)

// Description is one transaction as DescribeTransactions and
// ListTransactions show it.
type Description struct {
	ID         string
	State      State
	ProducerID int64
	Epoch      int16
	TimeoutMs  int32
	Start      time.Time // zero when no transaction is open
	Partitions []TP
}

func describe(m *meta) Description {
	return Description{ID: m.id, State: m.state, ProducerID: m.producerID, Epoch: m.epoch,
		TimeoutMs: m.timeoutMs, Start: m.start, Partitions: m.sortedPartitions()}
}

// Describe returns id's transaction, false when the id is unknown here.
func (c *Coordinator) Describe(ctx context.Context, id string) (Description, bool, error) {
	e, err := c.lookup(ctx, id, false)
	if err != nil || e == nil {
		return Description{}, false, err
	}
	defer e.mu.Unlock()
	if e.m == nil {
		return Description{}, false, nil
	}
	return describe(e.m), true, nil
}

// List returns every transactional id of the state partitions this
// broker leads, sorted by id.
func (c *Coordinator) List(ctx context.Context) ([]Description, error) {
	for p := range c.cfg.Partitions {
		if err := c.load(ctx, p); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			continue // led elsewhere, or unreadable now
		}
	}
	c.mu.Lock()
	entries := make([]*entry, 0, len(c.txns))
	for _, e := range c.txns {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	var out []Description
	for _, e := range entries {
		e.mu.Lock()
		if e.m != nil {
			out = append(out, describe(e.m))
		}
		e.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Description) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return out, nil
}

// OpenTransactions counts the transactions open or being completed.
func (c *Coordinator) OpenTransactions() int {
	c.mu.Lock()
	entries := make([]*entry, 0, len(c.txns))
	for _, e := range c.txns {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	n := 0
	for _, e := range entries {
		if e.mu.TryLock() {
			if e.m != nil && e.m.state >= Ongoing && e.m.state <= PrepareAbort {
				n++
			}
			e.mu.Unlock()
		} else {
			n++ // busy: being changed, most likely inside a transaction
		}
	}
	return n
}

// PendingOffsets lists the partitions of group with offsets inside a
// transaction not yet complete (KIP-447): a consumer asking for stable
// offsets is told to wait, or it could start from offsets the commit is
// about to move.
func (c *Coordinator) PendingOffsets(ctx context.Context, group string) map[TP]bool {
	if _, err := c.List(ctx); err != nil { // loads what this broker leads
		return nil
	}
	c.mu.Lock()
	entries := make([]*entry, 0, len(c.txns))
	for _, e := range c.txns {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	var out map[TP]bool
	for _, e := range entries {
		e.mu.Lock()
		if m := e.m; m != nil && (m.state == Ongoing || m.state == PrepareCommit) {
			for tp := range m.pending[group] {
				if out == nil {
					out = map[TP]bool{}
				}
				out[tp] = true
			}
		}
		e.mu.Unlock()
	}
	return out
}
