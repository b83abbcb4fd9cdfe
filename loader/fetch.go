package loader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"
)

// stallTimeout fails a run whose fetches bring nothing while partitions
// are still behind: brokers gone, or a partition's leader unavailable.
const stallTimeout = 30 * time.Second

// fetch reads every partition from start to end (or the limits) and hands
// the records to one writer goroutine per partition.
func (r *run) fetch(ctx context.Context, plans []*partPlan) error {
	offsets := map[string]map[int32]kgo.Offset{}
	byTP := map[string]map[int32]*partPlan{}
	remaining := 0
	for _, pl := range plans {
		pl.writer = newPartWriter(r, pl.topic, pl.part)
		if byTP[pl.topic] == nil {
			byTP[pl.topic] = map[int32]*partPlan{}
		}
		byTP[pl.topic][pl.part] = pl
		if pl.start >= pl.end {
			pl.done = true
			continue
		}
		if offsets[pl.topic] == nil {
			offsets[pl.topic] = map[int32]kgo.Offset{}
		}
		offsets[pl.topic][pl.part] = kgo.NewOffset().At(pl.start)
		remaining++
	}
	if remaining == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(r.cfg.Brokers...),
		kgo.ConsumePartitions(offsets),
		// Out of range means retention deleted what was next; the gap is
		// detected and reported below.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Fetches of 1 MiB a partition (kgo's default) keep the writers
		// busy while the next fetch is on its way; one fetch of a whole
		// backlog would leave them idle until all of it was decoded.
		kgo.FetchMaxPartitionBytes(1 << 20),
		kgo.FetchMaxBytes(64 << 20),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.RequestTimeoutOverhead(r.cfg.BrokerTimeout),
	}, r.cfg.kgoOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()

	// The writers and the fetch loop stand or fall together: the first
	// error cancels the rest, and a writer that fails abandons its files.
	g, gctx := errgroup.WithContext(ctx)
	for _, pl := range plans {
		if pl.done {
			continue
		}
		in := make(chan []*kgo.Record, 4)
		pl.in = in // the fetch loop's end of it; it closes and clears it
		g.Go(func() error {
			err := pl.writer.run(gctx, in)
			if err != nil {
				pl.writer.abandon()
			}
			return err
		})
	}
	g.Go(func() error {
		// Closing the inputs lets the writers complete their files, or
		// see the error that ended the loop.
		defer closeInputs(plans)
		return r.fetchLoop(gctx, cl, plans, byTP, remaining)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	for _, pl := range plans {
		r.sum.Records += pl.writer.records
		r.sum.Bytes += pl.writer.bytes
		r.sum.Errors += pl.writer.errCount
		r.sum.NoHeaderTime += pl.writer.noHeader
	}
	return nil
}

func (r *run) fetchLoop(ctx context.Context, cl *kgo.Client, plans []*partPlan, byTP map[string]map[int32]*partPlan, remaining int) error {
	var deadline time.Time
	if r.cfg.MaxDuration > 0 {
		deadline = r.started.Add(r.cfg.MaxDuration)
	}
	var total int64
	lastProgress := time.Now()
	lastReport := time.Time{}
	for remaining > 0 {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		if !deadline.IsZero() && !r.cfg.Now().Before(deadline) {
			r.sum.Stopped = "max duration"
			return nil
		}
		pctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		fetches := cl.PollRecords(pctx, 10000)
		cancel()
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			ferr = errors.Join(ferr, fmt.Errorf("fetching %s/%d: %w", t, p, err))
		})
		if ferr != nil {
			return ferr
		}
		got := 0
		var pause map[string][]int32
		var stop bool
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			pl := byTP[fp.Topic][fp.Partition]
			if pl == nil || pl.done || stop {
				return
			}
			// The records come in offset order: the batch is the run of
			// them in [next, end), handed on as it is, not copied.
			recs := fp.Records
			for len(recs) > 0 && recs[0].Offset < pl.next {
				recs = recs[1:]
			}
			n := 0
			for _, rec := range recs {
				if rec.Offset >= pl.end {
					break
				}
				n++
				if rec.Offset > pl.next {
					r.checkGap(ctx, pl, rec.Offset)
				}
				pl.next = rec.Offset + 1
				pl.records++
				pl.inputBytes += int64(len(rec.Value))
				total++
				if r.cfg.MaxRecords > 0 && total >= r.cfg.MaxRecords {
					stop = true
					break
				}
			}
			if batch := recs[:n]; len(batch) > 0 {
				got += len(batch)
				select {
				case pl.in <- batch:
				case <-ctx.Done():
				}
			}
			if pl.next >= pl.end {
				pl.done = true
				remaining--
				close(pl.in)
				pl.in = nil
				if pause == nil {
					pause = map[string][]int32{}
				}
				pause[pl.topic] = append(pause[pl.topic], pl.part)
			}
		})
		if pause != nil {
			cl.PauseFetchPartitions(pause)
		}
		if got > 0 {
			lastProgress = time.Now()
			if err := r.hook(FaultMidFetch); err != nil {
				return err
			}
		} else if time.Since(lastProgress) > stallTimeout {
			return fmt.Errorf("no records fetched for %v while %s; are the brokers at %v up?", stallTimeout, behind(plans), r.cfg.Brokers)
		}
		if stop {
			r.sum.Stopped = "max records"
			return nil
		}
		if r.cfg.Progress != nil && time.Since(lastReport) >= 250*time.Millisecond {
			lastReport = time.Now()
			r.cfg.Progress(r.progress(plans, total))
		}
	}
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.progress(plans, total))
	}
	return nil
}

// checkGap is called when a partition's next record is past the expected
// offset. Gaps are normal where records were never there (transaction
// markers); if the log start moved past the expected offset, retention
// deleted records while the run was reading, and the range is recorded.
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
		return // not retention
	}
	l := LostRange{Topic: pl.topic, Partition: pl.part, From: pl.next, To: got - 1,
		Reason: "deleted by retention while the run was reading it"}
	if logStart < 0 {
		l.Reason = fmt.Sprintf("missing from the log (could not list the log start: %v)", err)
	}
	r.log.Error("records lost before they were loaded", "topic", pl.topic, "partition", pl.part, "from", l.From, "to", l.To)
	r.sum.Lost = append(r.sum.Lost, l)
}

// closeInputs closes the writers' inputs the fetch loop has not closed.
func closeInputs(plans []*partPlan) {
	for _, pl := range plans {
		if pl.in != nil {
			close(pl.in)
			pl.in = nil
		}
	}
}

func behind(plans []*partPlan) string {
	var s []string
	for _, pl := range plans {
		if !pl.done {
			s = append(s, fmt.Sprintf("%s/%d is at %d of %d", pl.topic, pl.part, pl.next, pl.end))
		}
		if len(s) == 3 {
			s = append(s, "...")
			break
		}
	}
	return fmt.Sprint(s)
}

func (r *run) progress(plans []*partPlan, total int64) Progress {
	p := Progress{Elapsed: r.cfg.Now().Sub(r.started), Records: total}
	for _, pl := range plans {
		p.Partitions = append(p.Partitions, PartitionProgress{
			Topic: pl.topic, Partition: pl.part, Start: pl.start, Next: pl.next, End: pl.end, InputBytes: pl.inputBytes,
		})
		p.InputBytes += pl.inputBytes
	}
	return p
}
