package loader

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// take hands a fetch response's records to the writers and deals with its
// errors: a partition whose leader moved or is unknown waits for the
// metadata to say where it went; one whose offset is out of range restarts
// at the log start (retention deleted what was next); any other error
// fails the run.
func (f *fetcher) take(ctx context.Context, res fetchResult) error {
	delete(f.inFlight, res.broker)
	for _, pl := range res.parts {
		pl.inFlight = false
	}
	lost := func(err error) {
		// Until the metadata says otherwise, nothing is sent there.
		f.lastErr = err
		f.needMeta = true
		for _, pl := range res.parts {
			if pl.leader == res.broker {
				pl.leader = -1
			}
		}
	}
	if res.err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		lost(fmt.Errorf("fetching from broker %d: %w", res.broker, res.err))
		return nil
	}
	if err := kerr.ErrorForCode(res.resp.ErrorCode); err != nil {
		if !kerr.IsRetriable(err) {
			return fmt.Errorf("fetching from broker %d: %w", res.broker, err)
		}
		lost(fmt.Errorf("fetching from broker %d: %w", res.broker, err))
		return nil
	}
	for _, t := range res.resp.Topics {
		topic := t.Topic
		if topic == "" {
			topic = f.byID[t.TopicID]
		}
		for i := range t.Partitions {
			p := &t.Partitions[i]
			pl := f.byTP[topic][p.Partition]
			if pl == nil || pl.done {
				continue
			}
			err := kerr.ErrorForCode(p.ErrorCode)
			switch {
			case err == nil:
				if err := f.takePartition(ctx, pl, p); err != nil {
					return err
				}
				if f.stop {
					return nil
				}
			case errors.Is(err, kerr.OffsetOutOfRange):
				if err := f.outOfRange(ctx, pl); err != nil {
					return err
				}
			case kerr.IsRetriable(err):
				f.lastErr = fmt.Errorf("fetching %s/%d from broker %d: %w", pl.topic, pl.part, res.broker, err)
				f.needMeta = true
				pl.leader = -1
			default:
				return fmt.Errorf("fetching %s/%d at offset %d from broker %d: %w", pl.topic, pl.part, pl.fetchAt, res.broker, err)
			}
		}
	}
	return nil
}

// takePartition walks one partition's batches and hands the records in
// [next, end) to its writer as they lie in the response, leaving out
// aborted transactions.
func (f *fetcher) takePartition(ctx context.Context, pl *partPlan, p *kmsg.FetchResponseTopicPartition) error {
	r := f.r
	batches, dropped := p.RecordBatches, int64(-1)
	if len(p.AbortedTransactions) > 0 {
		aborted := make([]recordbatch.Aborted, len(p.AbortedTransactions))
		for i, a := range p.AbortedTransactions {
			aborted[i] = recordbatch.Aborted{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
		}
		batches, dropped = recordbatch.DropAborted(batches, aborted)
	}
	c := getChunk(len(batches))
	recs, fetched, err := recordbatch.WalkArena(c.recs, &c.arena, batches, pl.fetchAt, maxDecompressed)
	c.recs = recs
	if err != nil {
		return fmt.Errorf("fetching %s/%d: %w", pl.topic, pl.part, err)
	}
	fetched = max(fetched, dropped) // an answer may end in aborted batches
	if fetched > pl.fetchAt {
		pl.fetchAt = fetched
		f.moved = true
	}
	lo := 0
	for lo < len(recs) && recs[lo].Offset < pl.next {
		lo++
	}
	hi := lo
	for ; hi < len(recs); hi++ {
		rec := &recs[hi]
		if rec.Offset >= pl.end {
			break
		}
		if rec.Offset > pl.next && (p.LogStartOffset < 0 || p.LogStartOffset > pl.next) {
			// Below the log start the gap is the log's own (markers,
			// aborted or compacted records); above it, maybe a loss.
			r.checkGap(ctx, pl, rec.Offset)
		}
		pl.next = rec.Offset + 1
		pl.records++
		pl.inputBytes += int64(len(rec.Value))
		f.total++
		if r.cfg.MaxRecords > 0 && f.total >= r.cfg.MaxRecords {
			f.stop = true
			hi++
			break
		}
	}
	if hi == lo {
		c.release()
	} else {
		f.got += hi - lo
		c.recs = recs[lo:hi]
		select {
		case pl.in <- c:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if !f.stop {
		// Every record below the fetch offset has been handed on: what
		// is left below it (transaction markers, compacted records)
		// needs no reading again.
		pl.next = max(pl.next, min(pl.fetchAt, pl.end))
		if pl.next >= pl.end {
			f.finish(pl)
		}
	}
	return nil
}

// chunk is what a writer gets of one fetch response for its partition:
// records that point into the response or into arena, the buffer its
// compressed batches were expanded into. The writer hands it back
// (release) when done with it, and only then are records and arena
// reused: the pools spare a run allocating (and the collector scanning)
// both for every response.
type chunk struct {
	recs  []recordbatch.Record
	arena []byte
}

// maxArena bounds the room made for a partition's compressed batches of
// one fetch (1 MiB compressed expands to a few); batches past it get their
// own buffer.
const maxArena = 4 << 20

var chunkPool = sync.Pool{New: func() any { return new(chunk) }}

// getChunk returns a chunk for a response's batches of n bytes, with room
// for them to expand about fourfold: sized by the data, so that a run of
// many sparse partitions does not hold an arena of the largest size for
// each response.
func getChunk(n int) *chunk {
	c := chunkPool.Get().(*chunk)
	if want := min(maxArena, 4*n); cap(c.arena) < want {
		c.arena = make([]byte, 0, want)
	}
	return c
}

// release returns c to the pool, its references to response bytes
// cleared so that the pool does not keep them alive.
func (c *chunk) release() {
	recs := c.recs[:cap(c.recs)]
	clear(recs)
	c.recs, c.arena = recs[:0], c.arena[:0]
	chunkPool.Put(c)
}

// finish closes a partition read to its end.
func (f *fetcher) finish(pl *partPlan) {
	pl.done = true
	f.remaining--
	close(pl.in)
	pl.in = nil
}

// outOfRange restarts a partition at its log start when retention or
// DeleteRecords deleted the records it was to fetch next; the records lost are reported (by
// checkGap). An offset out of range of a log
// that still starts below it is a new leader not yet caught up: the
// fetch is repeated once the metadata has been asked again.
func (f *fetcher) outOfRange(ctx context.Context, pl *partPlan) error {
	tctx, cancel := context.WithTimeout(ctx, f.r.cfg.BrokerTimeout)
	defer cancel()
	starts, err := f.r.adm.ListStartOffsets(tctx, pl.topic)
	lo, ok := starts.Lookup(pl.topic, pl.part)
	if err != nil || !ok || lo.Err != nil || lo.Offset <= pl.fetchAt {
		f.lastErr = fmt.Errorf("fetching %s/%d at offset %d: %w", pl.topic, pl.part, pl.fetchAt, kerr.OffsetOutOfRange)
		f.needMeta = true
		pl.leader = -1
		return nil
	}
	// Report the range now, as deleted while the run read it:
	// the records past it may be markers, which hand nothing on.
	restart := min(lo.Offset, pl.end)
	f.r.checkGap(ctx, pl, restart)
	pl.fetchAt, pl.next = lo.Offset, restart
	f.moved = true
	if pl.next >= pl.end {
		f.finish(pl)
	}
	return nil
}

// refreshLeaders asks the brokers where each partition's leader is now.
func (f *fetcher) refreshLeaders(ctx context.Context) error {
	f.lastMeta = f.r.cfg.Now()
	req := kmsg.NewPtrMetadataRequest()
	for topic := range f.byTP {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, t)
	}
	tctx, cancel := context.WithTimeout(ctx, f.r.cfg.BrokerTimeout)
	defer cancel()
	resp, err := req.RequestWith(tctx, f.cl)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		f.metaErr = fmt.Errorf("asking the brokers at %v for partition leaders: %w", f.r.cfg.Brokers, err)
		return nil
	}
	f.metaErr = nil
	f.needMeta = false
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			if !kerr.IsRetriable(err) {
				return fmt.Errorf("asking the brokers at %v for the leaders of %s: %w", f.r.cfg.Brokers, *t.Topic, err)
			}
			f.metaErr, f.needMeta = fmt.Errorf("topic %s: %w", *t.Topic, err), true
			continue
		}
		f.byID[t.TopicID] = *t.Topic
		for _, p := range t.Partitions {
			pl := f.byTP[*t.Topic][p.Partition]
			if pl == nil {
				continue
			}
			pl.topicID = t.TopicID
			pl.leader, pl.epoch = p.Leader, p.LeaderEpoch
			if p.ErrorCode != 0 || p.Leader < 0 {
				// Leader not available (an election under way): ask
				// again, fetch the others meanwhile.
				pl.leader = -1
				f.needMeta = true
			}
		}
	}
	for _, pl := range f.plans {
		if !pl.done && pl.leader < 0 {
			f.needMeta = true
		}
	}
	return nil
}

// checkGap is called when a partition's next record is past the expected
// offset. Gaps are normal where records were never there (compaction); if
// the log start moved past the expected offset, records were deleted
// while the run was reading (by retention, or by DeleteRecords: the log
// start does not tell which), and the range is recorded.
func (r *run) checkGap(ctx context.Context, pl *partPlan, got int64) {
	tctx, cancel := context.WithTimeout(ctx, r.cfg.BrokerTimeout)
	defer cancel()
	starts, err := r.adm.ListStartOffsets(tctx, pl.topic)
	logStart := int64(-1)
	if err == nil {
		if lo, ok := starts.Lookup(pl.topic, pl.part); ok && lo.Err == nil {
			logStart = lo.Offset
		}
	}
	if logStart >= 0 && logStart <= pl.next {
		return // nothing deleted
	}
	l := LostRange{Topic: pl.topic, Partition: pl.part, From: pl.next, To: got - 1,
		Reason: "deleted from the log (by retention or DeleteRecords) while the run was reading it"}
	if logStart < 0 {
		l.Reason = fmt.Sprintf("missing from the log (could not list the log start: %v)", err)
	}
	r.log.Error("records lost before they were loaded", "topic", pl.topic, "partition", pl.part, "from", l.From, "to", l.To)
	r.sum.Lost = append(r.sum.Lost, l)
}
