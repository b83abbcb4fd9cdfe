package loader

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/errgroup"
)

// stallTimeout fails a run whose fetches bring nothing while partitions
// are still behind: brokers gone, or a partition's leader unavailable.
const stallTimeout = 30 * time.Second

// retryBackoff spaces the metadata requests of a run waiting for a leader
// (or a broker) to come back.
const retryBackoff = 250 * time.Millisecond

// fetch reads every partition from start to end (or the limits) and hands
// the records to one writer goroutine per partition.
//
// The records are not decoded into a record object each: fetches go
// straight to each partition's leader through the kgo client's connections
// (which carry its TLS and SASL), and the batches are walked in place
// (internal/recordbatch), the writers getting offsets, timestamps, keys and
// values that point into the fetch response. A response's bytes are never
// reused: they live as long as a writer holds records of them.
func (r *run) fetch(ctx context.Context, plans []*partPlan) error {
	remaining := 0
	for _, pl := range plans {
		pl.writer = newPartWriter(r, pl.topic, pl.part)
		pl.fetchAt, pl.leader = pl.start, -1
		if pl.start >= pl.end {
			pl.done = true
			continue
		}
		remaining++
	}
	if remaining == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(r.cfg.Brokers...),
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
		in := make(chan *chunk, 4)
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
		f := newFetcher(r, cl, plans, remaining)
		return f.loop(gctx)
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

// fetcher is the fetch loop's state. Only the loop's goroutine touches it
// and the plans; the goroutines it starts only send a request and return
// the response.
type fetcher struct {
	r         *run
	cl        *kgo.Client
	plans     []*partPlan
	byTP      map[string]map[int32]*partPlan
	byID      map[[16]byte]string // topic IDs, for brokers that answer by ID
	remaining int

	inFlight map[int32]bool // leader brokers with a fetch on its way
	results  chan fetchResult
	wg       sync.WaitGroup

	needMeta bool
	lastMeta time.Time
	metaErr  error // of the last metadata request, for the stall message
	lastErr  error // of the last failed fetch, for the stall message

	total int64 // records handed to the writers
	got   int   // in the response being taken
	moved bool  // some partition's fetch offset moved in it
	stop  bool  // max records reached
}

type fetchResult struct {
	broker int32
	parts  []*partPlan
	resp   *kmsg.FetchResponse
	err    error
}

func newFetcher(r *run, cl *kgo.Client, plans []*partPlan, remaining int) *fetcher {
	f := &fetcher{r: r, cl: cl, plans: plans, remaining: remaining, byTP: map[string]map[int32]*partPlan{},
		byID: map[[16]byte]string{}, inFlight: map[int32]bool{}, results: make(chan fetchResult, len(plans)), needMeta: true}
	for _, pl := range plans {
		if f.byTP[pl.topic] == nil {
			f.byTP[pl.topic] = map[int32]*partPlan{}
		}
		f.byTP[pl.topic][pl.part] = pl
	}
	return f
}

func (f *fetcher) loop(ctx context.Context) error {
	r := f.r
	fctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); f.wg.Wait() }()
	var deadline time.Time
	if r.cfg.MaxDuration > 0 {
		deadline = r.started.Add(r.cfg.MaxDuration)
	}
	lastProgress := time.Now()
	lastReport := time.Time{}
	wait := time.NewTimer(retryBackoff)
	defer wait.Stop()
	for f.remaining > 0 {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		if !deadline.IsZero() && !r.cfg.Now().Before(deadline) {
			r.sum.Stopped = "max duration"
			return nil
		}
		if f.needMeta && time.Since(f.lastMeta) >= retryBackoff {
			if err := f.refreshLeaders(ctx); err != nil {
				return err
			}
		}
		f.send(fctx)
		wait.Reset(retryBackoff)
		f.got, f.moved = 0, false
		select {
		case res := <-f.results:
			if err := f.take(ctx, res); err != nil {
				return err
			}
		case <-wait.C: // nothing back yet, or nothing sent: leaders unknown
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if f.got > 0 {
			if err := r.hook(FaultMidFetch); err != nil {
				return err
			}
		}
		if f.got > 0 || f.moved {
			lastProgress = time.Now()
		} else if time.Since(lastProgress) > stallTimeout {
			return f.stalled()
		}
		if f.stop {
			r.sum.Stopped = "max records"
			return nil
		}
		if r.cfg.Progress != nil && time.Since(lastReport) >= 250*time.Millisecond {
			lastReport = time.Now()
			r.cfg.Progress(r.progress(f.plans, f.total))
		}
	}
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.progress(f.plans, f.total))
	}
	return nil
}

func (f *fetcher) stalled() error {
	err := fmt.Errorf("no records fetched for %v while %s; are the brokers at %v up?", stallTimeout, behind(f.plans), f.r.cfg.Brokers)
	if last := f.lastErr; last != nil {
		err = fmt.Errorf("%w (last: %v)", err, last)
	} else if f.metaErr != nil {
		err = fmt.Errorf("%w (last: %v)", err, f.metaErr)
	}
	return err
}

// send starts one fetch to each leader broker that has partitions to read
// and no fetch on its way: the writers work on what came while the next
// comes.
func (f *fetcher) send(ctx context.Context) {
	var byLeader map[int32][]*partPlan
	for _, pl := range f.plans {
		if pl.done || pl.inFlight || pl.leader < 0 || f.inFlight[pl.leader] {
			continue
		}
		if byLeader == nil {
			byLeader = map[int32][]*partPlan{}
		}
		byLeader[pl.leader] = append(byLeader[pl.leader], pl)
	}
	for id, parts := range byLeader {
		f.inFlight[id] = true
		for _, pl := range parts {
			pl.inFlight = true
		}
		req := fetchRequest(parts)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			resp, err := req.RequestWith(ctx, f.cl.Broker(int(id)))
			f.results <- fetchResult{broker: id, parts: parts, resp: resp, err: err}
		}()
	}
}

// Fetch sizes: 1 MiB a partition (what Kafka's clients ask for) keeps the
// writers busy while the next fetch is on its way; one fetch of a whole
// backlog would leave them idle until all of it had been walked.
const (
	fetchPartitionBytes = 1 << 20
	fetchMaxBytes       = 64 << 20
	fetchMaxWait        = 500 * time.Millisecond
)

// maxDecompressed bounds what one compressed batch may expand to: the
// broker's own default bound, so that any batch it accepted can be read.
const maxDecompressed = 64 << 20

func fetchRequest(parts []*partPlan) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(fetchMaxWait.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = fetchMaxBytes
	req.SessionEpoch = -1 // no fetch session: every fetch names its partitions
	// Only what committed readers see is loaded: the broker stops at the
	// last stable offset and lists aborted transactions (takePartition).
	req.IsolationLevel = 1
	byTopic := map[string]int{}
	for _, pl := range parts {
		i, ok := byTopic[pl.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[pl.topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = pl.topic, pl.topicID
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = pl.part
		p.CurrentLeaderEpoch = pl.epoch
		p.FetchOffset = pl.fetchAt
		p.LogStartOffset = -1
		p.PartitionMaxBytes = fetchPartitionBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	return req
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
