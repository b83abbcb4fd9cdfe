package txn

import (
	"context"
	"time"
)

// checkLoop runs every CheckInterval: it aborts transactions open past
// their timeout, completes decided ones whose markers could not all be
// written yet (or that a restart found prepared), and forgets ids idle
// past IDExpiration.
func (c *Coordinator) checkLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.checkOnce()
		}
	}
}

func (c *Coordinator) checkOnce() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	c.mu.Lock()
	ids := make(map[string]*entry, len(c.txns))
	for id, e := range c.txns {
		ids[id] = e
	}
	c.mu.Unlock()
	now := c.cfg.Clock()
	for id, e := range ids {
		if !e.mu.TryLock() {
			continue // in use: its producer is active
		}
		m := e.m
		var err error
		switch {
		case m == nil:
		case m.state == PrepareCommit || m.state == PrepareAbort:
			err = c.complete(ctx, m)
		case m.state == Ongoing && now.Sub(m.start) > time.Duration(m.timeoutMs)*time.Millisecond:
			err = c.fenceAndAbort(ctx, m, "the transaction timed out")
		case m.state != Ongoing && now.Sub(m.lastUpdate) > c.cfg.IDExpiration:
			err = c.forget(ctx, id, e)
		}
		e.mu.Unlock()
		if err != nil {
			c.log.Warn("transaction check", "transactional_id", id, "err", err)
		}
	}
}

// forget writes id's tombstone and drops it; call with e.mu held.
func (c *Coordinator) forget(ctx context.Context, id string, e *entry) error {
	if err := c.be.AppendState(ctx, PartitionFor(id, c.cfg.Partitions), []Record{{Key: encodeKey(id)}}); err != nil {
		return err
	}
	c.mu.Lock()
	if c.txns[id] == e {
		delete(c.txns, id)
	}
	c.mu.Unlock()
	e.m = nil
	c.log.Info("forgot an idle transactional id", "transactional_id", id)
	return nil
}
