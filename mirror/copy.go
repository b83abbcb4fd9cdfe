package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/schema"
)

// consume polls the source and hands each record to the target producer,
// until ctx ends. Back-pressure is the producer's: Produce blocks while the
// target has too much unacknowledged (MaxBufferedBytes), which stops the
// polling too. Between polls (no revocation can run then) it restarts the
// partitions whose copies the target refused.
func (s *source) consume(ctx context.Context) {
	// Leaving the group waits for the rebalance the polls block.
	defer s.client.AllowRebalance()
	var lastErr time.Time
	for ctx.Err() == nil {
		s.restartFailed(ctx)
		// Polls time out so that a failed partition restarts while the
		// others are idle.
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := s.client.PollRecords(pctx, 10000)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			s.events.failures.WithLabelValues("source").Inc()
			if time.Since(lastErr) > 30*time.Second {
				lastErr = time.Now()
				s.log.Warn("fetching from the source failed; retrying", "topic", topic, "partition", p, "err", err)
			}
		})
		if err := s.checkEnvelopes(fs); err != nil {
			s.stop(ctx, err)
			return
		}
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			part := s.lookup(fp.Topic, fp.Partition)
			switch {
			case part == nil || len(fp.Records) == 0:
			case part.w != nil:
				s.handOver(ctx, part, batch{fp.Records, fp.LogStartOffset})
			default:
				for _, r := range fp.Records {
					s.copyPartition(ctx, part, r, fp.LogStartOffset)
				}
			}
		})
		s.client.AllowRebalance()
	}
}

// checkEnvelopes refuses to copy schema-registry envelopes when there is no
// registry to translate their ids: a source id names another schema, or
// none, in the analysis datacenter's registry, and consumers there would
// decode wrong data without a word. The whole poll is checked before any of
// it is copied.
func (s *source) checkEnvelopes(fs kgo.Fetches) error {
	if s.cfg.TargetRegistry != "" || s.cfg.KeepSchemaIDs {
		return nil
	}
	var err error
	fs.EachRecord(func(r *kgo.Record) {
		if err != nil || strings.HasPrefix(r.Topic, "_") {
			return
		}
		if id, _, derr := schema.DecodeEnvelope(r.Value); derr == nil {
			err = &fatalError{fmt.Errorf("source %s: %s/%d offset %d holds a schema-registry envelope (schema id %d) and no target registry is given: "+
				"copied as it is, its id would name another schema, or none, in the analysis datacenter. Give --target-registry URL and --source-registry %s=URL "+
				"to translate schema ids, or --keep-schema-ids if both datacenters share one registry; nothing of this poll was copied",
				s.Name, r.Topic, r.Partition, r.Offset, id, s.Name)}
		}
	})
	return err
}

// maxAttempts is how often a partition is resumed from the target's tail
// after the target refused the same record, before the record is taken
// for poison and the partition stopped.
const maxAttempts = 5

// restartFailed handles the partitions a produce callback marked failed:
// once nothing of theirs is in flight, each resumes from what the target
// holds (so that nothing is copied twice and nothing skipped), or, refused
// maxAttempts times at the same offset, stops.
func (s *source) restartFailed(ctx context.Context) {
	for _, part := range s.partitions() {
		part.mu.Lock()
		failed, at, hi, revoked, alone := part.failed, part.failedAt, part.failedHi, part.revoked, part.careful >= part.failedAt
		part.mu.Unlock()
		if failed == nil || revoked || part.inflight.Load() > 0 || part.queued.Load() > 0 || time.Now().Before(part.retryAt) {
			continue
		}
		part.mu.Lock()
		fenced := part.fenced
		if fenced {
			// Another process initialized the partition's producer: the
			// group gave it the partition, and will soon tell this one.
			// Only if it does not is the partition taken back, after a
			// session timeout; that is no failure of the record.
			part.fenced = false
			part.retryAt = time.Now().Add(s.cfg.SessionTimeout)
			part.mu.Unlock()
			s.log.Warn("another mirror took over the partition's transactional producer; waiting for the group to say who owns it",
				"topic", part.topic, "partition", part.partition, "err", failed)
			continue
		}
		part.attempts++
		attempts := part.attempts
		part.careful = max(part.careful, hi)
		part.retryAt = time.Now().Add(min(time.Duration(1<<attempts)*250*time.Millisecond, 5*time.Second))
		part.mu.Unlock()
		if attempts >= maxAttempts || isPoison(failed) && alone {
			s.stopPartition(part, at, failed)
			continue
		}
		s.log.Warn("the target refused a copy; resuming the partition from what the target holds",
			"topic", part.topic, "partition", part.partition, "offset", at, "attempt", attempts, "err", failed)
		if part.w != nil {
			// A new producer fences what is left of the old one before
			// the tail is read.
			part.w.drop()
			if err := s.initWriter(ctx, part.w); err != nil {
				var fatal *fatalError
				if errors.As(err, &fatal) {
					s.stop(ctx, err)
				}
				return
			}
		}
		// An upgraded partition that has no new copy yet keeps the older
		// mirror's commit it started from (resume uses it only then).
		parts, err := s.resume(ctx, part.topic, []int32{part.partition}, map[int32]int64{part.partition: part.resumed})
		if err != nil {
			return // ctx ended, or a fatal error already stopped the mirror
		}
		fresh := parts[part.partition]
		part.mu.Lock()
		part.next, part.resumed, part.copiedTo, part.failed = fresh.next, fresh.next, fresh.copiedTo, nil
		part.acks = ackWindow{safe: fresh.next}
		part.targetN, part.target = fresh.targetN, fresh.target
		part.mu.Unlock()
		s.client.SetOffsets(map[string]map[int32]kgo.EpochOffset{part.topic: {part.partition: {Epoch: -1, Offset: fresh.next}}})
		s.client.ResumeFetchPartitions(map[string][]int32{part.topic: {part.partition}})
	}
}

// stopPartition stops copying one partition for good (until the mirror
// restarts): its record at offset cannot be copied. The others go on.
func (s *source) stopPartition(part *partition, offset int64, err error) {
	s.client.PauseFetchPartitions(map[string][]int32{part.topic: {part.partition}})
	part.mu.Lock()
	already := part.stopped != nil
	part.stopped, part.failed = err, nil
	part.mu.Unlock()
	if !already {
		s.log.Error("stopped copying a partition: one of its records cannot be copied; the other partitions go on, and this one resumes at this record when the mirror restarts",
			"topic", part.topic, "partition", part.partition, "offset", offset, "err", err)
	}
}

// copyPartition copies one record of a partition. Records come in order
// from where the partition resumed. A record beyond the next expected
// offset is a loss only when the source's log start (as its fetch answer
// gave it, -1 if unknown) is past that offset: retention deleted records
// before they were copied, logged as the loss it is. Below the log start
// the gap is the log's own: compacted records, transaction markers and
// aborted transactions, which a read_committed fetch leaves out.
func (s *source) copyPartition(ctx context.Context, part *partition, r *kgo.Record, logStart int64) {
	part.mu.Lock()
	next, failed, halted := part.next, part.failed != nil, part.revoked || part.failed != nil || part.stopped != nil
	part.mu.Unlock()
	switch {
	case halted, r.Offset < next:
		if failed {
			s.client.PauseFetchPartitions(map[string][]int32{part.topic: {part.partition}})
		}
		return
	case r.Offset > next && (logStart < 0 || logStart > next):
		to := r.Offset
		if logStart > 0 {
			to = min(to, logStart)
		}
		s.log.Error("the source deleted records before they were copied (retention shorter than the mirror's lag); they are lost to the target",
			"topic", part.topic, "partition", part.partition, "from", next, "to", to-1, "lost", to-next)
		part.lost.Add(to - next)
	}
	if err := s.copyRecord(ctx, part, r); err != nil {
		var fatal *fatalError
		if errors.As(err, &fatal) {
			s.stopPartition(part, r.Offset, err)
		}
	}
}

// copyRecord produces one record to the target, or skips it when it came
// from the target in the first place, or is there already.
func (s *source) copyRecord(ctx context.Context, part *partition, r *kgo.Record) error {
	origin, hasOrigin := header(r.Headers, OriginHeader)
	target := part.target
	if target < 0 {
		target = byKey(r.Key, r.Partition, part.targetN)
	}
	if hasOrigin && visited([]byte(origin), s.cfg.TargetName) || part.placed(target, r.Offset) {
		part.mu.Lock()
		part.acks.skip(r.Offset)
		part.next = r.Offset + 1
		part.mu.Unlock()
		if hasOrigin && visited([]byte(origin), s.cfg.TargetName) {
			part.skipped.Add(1)
		}
		return nil
	}
	value, err := s.rewriteValue(ctx, part, r)
	if err != nil {
		return err
	}
	out := &kgo.Record{
		Topic:     part.dstTopic,
		Partition: target,
		Key:       r.Key,
		Value:     value,
		Timestamp: r.Timestamp,
		Headers:   make([]kgo.RecordHeader, 0, len(r.Headers)+1),
	}
	var prev []byte
	for _, h := range r.Headers {
		if h.Key == OriginHeader {
			prev = h.Value
			continue
		}
		out.Headers = append(out.Headers, h)
	}
	out.Headers = append(out.Headers, kgo.RecordHeader{Key: OriginHeader,
		Value: appendHop(prev, hop{cluster: s.Name, partition: r.Partition, offset: r.Offset})})
	if sa, ok := s.cfg.Auditor.(sendAuditor); ok {
		if err := sa.Sending(ctx, s.Name, out); err != nil {
			return err
		}
	}
	part.mu.Lock()
	seq := part.acks.add(r.Offset)
	part.next = r.Offset + 1
	part.mu.Unlock()
	offset, sent := r.Offset, time.Now()
	promise := func(rec *kgo.Record, err error) {
		if err == nil {
			s.events.ackLatency.WithLabelValues(s.Name).Observe(time.Since(sent).Seconds())
		}
		s.acked(ctx, part, seq, offset, rec, err)
	}
	if part.w != nil {
		if !s.produceTxn(ctx, part, out, promise) {
			if sa, ok := s.cfg.Auditor.(sendAuditor); ok {
				sa.Failed(s.Name, out)
			}
			return nil
		}
		if r.Offset <= part.careful {
			// After a refusal: one record a transaction up to where it
			// happened.
			s.endTransaction(s.commitCtx, part)
		}
		return nil
	}
	part.inflight.Add(1)
	s.tgt.client.Produce(ctx, out, promise)
	if r.Offset <= part.careful {
		// After a refusal: one record at a time up to where it happened.
		drain(ctx, []*partition{part})
	}
	return nil
}

// acked is the producer's callback: the record is in the target (err nil),
// or could not be written.
func (s *source) acked(ctx context.Context, part *partition, seq uint64, offset int64, rec *kgo.Record, err error) {
	txn := part.w != nil
	if txn {
		// In flight until its transaction ends; counted at the commit.
		part.w.ackedTxn(seq, rec, err)
	} else {
		defer part.inflight.Add(-1)
	}
	if err != nil {
		if sa, ok := s.cfg.Auditor.(sendAuditor); ok {
			sa.Failed(s.Name, rec)
		}
		// A record failed by our own shutdown is simply not copied: the
		// next run finds it missing in the target.
		if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		// The refusal may come of a stale view of the target (a topic
		// just grown): look again before the partition resumes.
		s.tgt.client.ForceMetadataRefresh()
		part.mu.Lock()
		part.failedHi = max(part.failedHi, offset)
		if part.failed == nil {
			part.failedHi = offset
			part.failed = fmt.Errorf("source %s: %s/%d offset %d: the target did not accept the record (target %s/%d): %w",
				s.Name, part.topic, part.partition, offset, rec.Topic, rec.Partition, err)
			if part.failedAt != offset {
				part.attempts = 0
			}
			part.failedAt = offset
			part.fenced = fenced(err)
		}
		part.mu.Unlock()
		if txn {
			part.w.poke()
		}
		return
	}
	if txn {
		return
	}
	part.mu.Lock()
	part.acks.ack(seq)
	part.mu.Unlock()
	part.copied.Add(1)
	part.bytes.Add(int64(len(rec.Key) + len(rec.Value)))
	s.lastAck.Store(time.Now().UnixNano())
	if s.cfg.Auditor != nil {
		s.cfg.Auditor.Copied(s.Name, rec)
	}
}

// isPoison tells an error about the record itself (too large, invalid for
// the target) from one a resume may get past.
func isPoison(err error) bool {
	for _, e := range []error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.CorruptMessage,
		kerr.InvalidTimestamp, kerr.PolicyViolation, kerr.TopicAuthorizationFailed, kerr.InvalidRequiredAcks} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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
		return nil, &fatalError{fmt.Errorf("source %s: %s/%d offset %d: %w; the partition stopped here and resumes here once the schema is in the source registry and the mirror restarts (or run with --unknown-schemas=copy to copy such records unchanged)",
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
