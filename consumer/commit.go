package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Commit writes the processed offsets of the owned partitions to the offset
// registry. Partitions whose ownership was lost are skipped with an error.
func (g *Group) Commit(ctx context.Context) error {
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	type item struct {
		tp   topicPartition
		pos  *position
		done int64
	}
	var items []item
	g.mu.Lock()
	for tp, pos := range g.owned {
		if pos.done >= 0 && pos.done != pos.committed {
			items = append(items, item{tp, pos, pos.done})
		}
	}
	g.mu.Unlock()
	var errs []error
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("committing offsets: %w", err)
		}
		if err := g.writeOffset(it.tp, it.pos, it.done); err != nil {
			errs = append(errs, err)
			continue
		}
		g.mu.Lock()
		it.pos.committed = it.done
		g.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (g *Group) commitPeriodically() {
	defer g.wg.Done()
	t := time.NewTicker(g.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), g.cfg.SessionTimeout)
			if err := g.Commit(ctx); err != nil {
				g.log.Warn("periodic commit failed; will retry", "err", err)
			}
			cancel()
		}
	}
}
