package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consume takes the group's records and hands each to the target
// producer, until ctx ends. Back-pressure is the producer's: Produce blocks
// while the target has too much unacknowledged (MaxBufferedBytes), which
// stops the consuming too.
func (s *source) consume(ctx context.Context) {
	for ctx.Err() == nil {
		g := s.currentGroup()
		if g == nil {
			sleep(ctx, 100*time.Millisecond) // not a member yet, or rejoining
			continue
		}
		r, err := g.Next(ctx)
		if err != nil {
			// Closed for a rejoin, or failed (checkGroup rejoins).
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		part := s.lookup(r.Topic, r.Partition)
		if part == nil {
			continue // revoked since Next returned it
		}
		if err := s.copyPartition(ctx, part, r); err != nil {
			s.stop(ctx, err)
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// copyPartition copies one record of a partition. The group delivers each
// partition's records in order from where it was committed; a record beyond
// the next expected offset means the source's retention deleted records
// before they were copied, which is logged as the loss it is.
func (s *source) copyPartition(ctx context.Context, part *partition, r *kgo.Record) error {
	if part.targetN == 0 {
		if err := s.prepare(ctx, part); err != nil {
			return err
		}
	}
	part.mu.Lock()
	next, revoked := part.next, part.revoked
	if next < 0 {
		next, part.next = r.Offset, r.Offset
	}
	part.mu.Unlock()
	switch {
	case revoked, r.Offset < next:
		return nil
	case r.Offset > next:
		s.log.Error("the source deleted records before they were copied (retention shorter than the mirror's lag); they are lost to the target",
			"topic", part.topic, "partition", part.partition, "from", next, "to", r.Offset-1, "lost", r.Offset-next)
		part.lost.Add(r.Offset - next)
	}
	return s.copyRecord(ctx, part, r)
}

// copyRecord produces one record to the target, or skips it when it came
// from the target in the first place.
func (s *source) copyRecord(ctx context.Context, part *partition, r *kgo.Record) error {
	origin, hasOrigin := header(r.Headers, OriginHeader)
	if hasOrigin && origin == s.cfg.TargetName {
		part.mu.Lock()
		part.acks.skip(r.Offset)
		part.next = r.Offset + 1
		safe := part.acks.safe
		part.mu.Unlock()
		part.skipped.Add(1)
		s.markProcessed(part, safe)
		return nil
	}
	value, err := s.rewriteValue(ctx, part, r)
	if err != nil {
		return err
	}
	out := &kgo.Record{
		Topic:     r.Topic,
		Partition: part.target,
		Key:       r.Key,
		Value:     value,
		Timestamp: r.Timestamp,
		Headers:   r.Headers,
	}
	if part.target < 0 {
		out.Partition = byKey(r.Key, r.Partition, part.targetN)
	}
	if !hasOrigin {
		out.Headers = append(slices.Clip(r.Headers), kgo.RecordHeader{Key: OriginHeader, Value: []byte(s.Name)})
	}
	part.mu.Lock()
	seq := part.acks.add(r.Offset)
	part.next = r.Offset + 1
	part.mu.Unlock()
	part.inflight.Add(1)
	offset, sent := r.Offset, time.Now()
	s.tgt.client.Produce(ctx, out, func(rec *kgo.Record, err error) {
		if err == nil {
			s.events.ackLatency.WithLabelValues(s.Name).Observe(time.Since(sent).Seconds())
		}
		s.acked(ctx, part, seq, offset, rec, err)
	})
	return nil
}

// acked is the producer's callback: the record is in the target (err nil),
// or could not be written.
func (s *source) acked(ctx context.Context, part *partition, seq uint64, offset int64, rec *kgo.Record, err error) {
	part.inflight.Add(-1)
	if err != nil {
		// A record failed by our own shutdown is simply not copied: its
		// offset is never committed, so the next run copies it.
		if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
			s.stop(ctx, &fatalError{fmt.Errorf("source %s: %s/%d offset %d: the target did not accept the record (target partition %d): %w",
				s.Name, part.topic, part.partition, offset, rec.Partition, err)})
		}
		return
	}
	part.mu.Lock()
	part.acks.ack(seq)
	safe := part.acks.safe
	part.mu.Unlock()
	s.markProcessed(part, safe)
	part.copied.Add(1)
	part.bytes.Add(int64(len(rec.Key) + len(rec.Value)))
	s.lastAck.Store(time.Now().UnixNano())
	if s.cfg.Auditor != nil {
		s.cfg.Auditor.Copied(s.Name, rec)
	}
}

// markProcessed tells the group that everything of part below safe is in
// the target, so that its next commit may write safe. A mark for a
// partition the group no longer owns is ignored.
func (s *source) markProcessed(part *partition, safe int64) {
	if g := s.currentGroup(); g != nil && safe >= 0 {
		g.MarkProcessed(part.topic, part.partition, safe)
	}
}

// rewriteValue carries the value's schema id over to the target registry,
// retrying while a registry cannot be reached.
func (s *source) rewriteValue(ctx context.Context, part *partition, r *kgo.Record) ([]byte, error) {
	if s.schemas == nil || r.Value == nil {
		return r.Value, nil
	}
	value, err := retry(ctx, s.log, s.events.failures.WithLabelValues("registry"), "resolving a schema id", func() ([]byte, error) {
		v, err := s.schemas.rewrite(ctx, r.Topic, r.Value)
		var unresolved *unresolvedError
		if errors.As(err, &unresolved) || errors.Is(err, errNotEnvelope) {
			return v, &fatalError{err}
		}
		return v, err
	})
	var unresolved *unresolvedError
	switch {
	case err == nil, errors.Is(err, errNotEnvelope):
		return value, nil
	case errors.As(err, &unresolved) && s.cfg.UnknownSchemas == CopyUnknown:
		if part.unknown.Add(1) == 1 {
			s.log.Warn("copying records with an unresolvable schema id unchanged (counted in the status as unknown_schemas)",
				"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
		}
		return r.Value, nil
	case errors.As(err, &unresolved):
		return nil, &fatalError{fmt.Errorf("source %s: %s/%d offset %d: %w; the mirror stopped here and resumes here once the schema is in the source registry (or run with --unknown-schemas=copy to copy such records unchanged)",
			s.Name, r.Topic, r.Partition, r.Offset, err)}
	default:
		return nil, err // ctx ended
	}
}

// header returns the value of the first header named key.
func header(hs []kgo.RecordHeader, key string) (string, bool) {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}
