package consumer

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Next returns the next record of any partition this consumer owns, in
// offset order within each partition. It blocks while there is nothing to
// read, until data arrives, ctx ends, or the group is closed (ErrClosed) or
// has failed. Calling Next marks the record it returned before as
// processed, so its offset is committed, unless Config.MarkManually.
func (g *Group) Next(ctx context.Context) (*kgo.Record, error) {
	g.mu.Lock()
	g.markProcessedLocked()
	for {
		if g.err != nil {
			err := g.err
			g.mu.Unlock()
			return nil, err
		}
		if rec := g.popLocked(); rec != nil {
			g.mu.Unlock()
			return rec, nil
		}
		if g.paused > 0 {
			resumed := g.resumed
			g.mu.Unlock()
			select {
			case <-resumed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			g.mu.Lock()
			continue
		}
		if err := ctx.Err(); err != nil {
			g.mu.Unlock()
			return nil, err
		}
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		g.polling, g.cancelFn = done, cancel
		g.mu.Unlock()

		fetches := g.client.PollRecords(pctx, 0)
		cancel()

		g.mu.Lock()
		g.polling, g.cancelFn = nil, nil
		close(done)
		fetches.EachRecord(func(r *kgo.Record) { g.buf = append(g.buf, r) })
		fetches.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
				return // ours: a pause, the caller's context, or Close
			}
			g.log.Warn("fetch error", "topic", topic, "partition", partition, "err", err)
		})
	}
}

// popLocked takes the next deliverable record: one of a partition we own
// now, and not behind what was already delivered from it.
func (g *Group) popLocked() *kgo.Record {
	for len(g.buf) > 0 {
		rec := g.buf[0]
		g.buf[0] = nil
		g.buf = g.buf[1:]
		pos := g.owned[topicPartition{rec.Topic, rec.Partition}]
		if pos == nil || (pos.next >= 0 && rec.Offset < pos.next) {
			continue
		}
		pos.next = rec.Offset + 1
		g.last, g.lastPos = rec, pos
		return rec
	}
	return nil
}

// markProcessedLocked counts the record handed out last as processed, if
// its partition is still held under the same claim and the caller does not
// mark records itself.
func (g *Group) markProcessedLocked() {
	rec, pos := g.last, g.lastPos
	g.last, g.lastPos = nil, nil
	if rec == nil || g.cfg.MarkManually || g.owned[topicPartition{rec.Topic, rec.Partition}] != pos {
		return
	}
	pos.done = max(pos.done, rec.Offset+1)
}
