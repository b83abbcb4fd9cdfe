package loader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"regexp"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/loader/warehouse"
	"github.com/tributary-io/tributary/schema"
)

// run is one load run in progress.
type run struct {
	cfg     Config
	id      string
	w       warehouse.FS
	deser   *schema.Deserializer
	headers *schema.HeaderLayouts
	log     *slog.Logger
	started time.Time
	sum     *Summary

	errCount atomic.Int64
	crashed  atomic.Bool
}

// hook calls the Fault hook at point; an error from it means "die here".
func (r *run) hook(point FaultPoint) error {
	if r.cfg.Fault == nil {
		return nil
	}
	if err := r.cfg.Fault(point); err != nil {
		r.crashed.Store(true)
		return errCrash{err}
	}
	return nil
}

// partPlan is what a run does on one partition.
type partPlan struct {
	topic      string
	part       int32
	start, end int64 // read [start, end)
	next       int64 // first offset not yet handed to the writer
	inputBytes int64
	records    int64
	prev       *PartitionState
	writer     *partWriter
	in         chan []*kgo.Record
	done       bool
}

// Run performs one load run (see the package documentation). It returns
// the run's summary even on failure, with Committed saying whether the
// run's data is in the warehouse.
func Run(ctx context.Context, c Config) (*Summary, error) {
	cfg, err := c.withDefaults()
	if err != nil {
		return &Summary{}, fmt.Errorf("load: %w", err)
	}
	started := cfg.Now()
	id := cfg.RunID
	if id == "" {
		id = NewRunID(started)
	}
	sum := &Summary{Run: id, Started: started}
	defer func() { sum.Finished = cfg.Now() }()
	r := &run{cfg: cfg, id: id, log: cfg.Logger.With("run", id), started: started, sum: sum}

	r.w = cfg.FS
	if r.w == nil {
		if r.w, err = warehouse.Open(cfg.Warehouse); err != nil {
			return sum, err
		}
		defer r.w.Close()
	}
	sum.Warehouse = r.w.String()

	reg := cfg.Registry
	if reg == nil {
		if reg, err = sr.NewClient(sr.URLs(cfg.RegistryURL), sr.HTTPClient(&http.Client{Timeout: cfg.BrokerTimeout})); err != nil {
			return sum, fmt.Errorf("schema registry %s: %w", cfg.RegistryURL, err)
		}
	}
	if r.deser, err = schema.NewDeserializer(reg, schema.DeserializerConfig{}); err != nil {
		return sum, err
	}
	r.headers = schema.NewHeaderLayouts(r.deser, cfg.HeaderField)

	kcl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.RequestTimeoutOverhead(cfg.BrokerTimeout))
	if err != nil {
		return sum, fmt.Errorf("brokers %v: %w", cfg.Brokers, err)
	}
	defer kcl.Close()
	adm := kadm.NewClient(kcl)

	topics, err := r.resolveTopics(ctx, adm)
	if err != nil {
		return sum, err
	}

	// One run per topic at a time, across processes and machines.
	var locks []*warehouse.Lock
	defer func() {
		for _, l := range locks {
			if r.crashed.Load() {
				l.Abandon()
			} else {
				l.Release()
			}
		}
	}()
	held := make(map[string]bool, len(topics))
	for _, t := range topics {
		l, err := warehouse.AcquireLock(r.w, topicLockName(t), cfg.Holder+" run "+id, cfg.LockTTL)
		if err != nil {
			return sum, fmt.Errorf("topic %s: %w", t, err)
		}
		locks = append(locks, l)
		held[t] = true
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for _, l := range locks {
		go func() {
			select {
			case <-l.Lost():
				cancel(fmt.Errorf("lost the lock on %s: %w", l.Name(), l.Err()))
			case <-ctx.Done():
			}
		}()
	}

	mv := &mover{w: r.w, log: r.log, fault: r.hook, tryLock: func(more []string) (func(), bool) {
		var extra []*warehouse.Lock
		release := func() {
			for _, l := range extra {
				l.Release()
			}
		}
		for _, t := range more {
			l, err := warehouse.AcquireLock(r.w, topicLockName(t), cfg.Holder+" run "+id+" (recovery)", cfg.LockTTL)
			if err != nil {
				release()
				return nil, false
			}
			extra = append(extra, l)
		}
		return release, true
	}}
	if sum.Recovered, sum.Discarded, err = mv.recoverRuns(held); err != nil {
		return sum, fmt.Errorf("recovering earlier runs: %w", err)
	}
	state, _, err := loadState(r.w, topics)
	if err != nil {
		return sum, fmt.Errorf("reading committed offsets: %w", err)
	}

	plans, lost, listedAt, err := r.plan(ctx, adm, topics, state)
	if err != nil {
		return sum, err
	}
	sum.Lost = lost

	if err := writeJSON(r.w, path.Join(runDir(id), runInfoName), runInfo{Run: id, Topics: topics, Started: started}); err != nil {
		return sum, fmt.Errorf("starting run directory in %s: %w", r.w, err)
	}
	committed := false
	defer func() {
		if !committed && !r.crashed.Load() {
			// Best effort: recovery deletes it otherwise.
			r.w.RemoveAll(runDir(id))
		}
	}()

	if err := r.fetch(ctx, kcl, adm, plans); err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		return sum, err
	}

	m := r.manifest(plans, state, listedAt)
	for _, f := range m.Files {
		if f.Kind == "data" {
			sum.Files++
		}
	}
	sum.Markers = m.Markers

	// The commit point: the manifest's rename into commits/. Sequence
	// numbers order the commits of a topic; its lock keeps anyone else
	// from committing it meanwhile.
	commits, err := listCommits(r.w)
	if err != nil {
		return sum, err
	}
	m.Seq = 1
	if len(commits) > 0 {
		m.Seq = commits[len(commits)-1].seq + 1
	}
	m.Committed = cfg.Now()
	if err := writeJSON(r.w, path.Join(runDir(id), manifestName), m); err != nil {
		return sum, fmt.Errorf("writing the manifest: %w", err)
	}
	if err := r.hook(FaultBeforeCommit); err != nil {
		return sum, err
	}
	for _, l := range locks {
		if err := l.Check(); err != nil {
			return sum, fmt.Errorf("not committing: %w", err)
		}
	}
	if err := r.w.Rename(path.Join(runDir(id), manifestName), commitName(m.Seq, id)); err != nil {
		return sum, fmt.Errorf("committing run %s in %s: %w", id, r.w, err)
	}
	committed = true
	sum.Committed = true
	r.log.Info("run committed", "records", sum.Records, "files", sum.Files, "errors", sum.Errors, "lost_ranges", len(sum.Lost))
	if err := r.hook(FaultAfterCommit); err != nil {
		return sum, err
	}
	moveErr := mv.finish(m)
	if cfg.Audit != nil && !r.crashed.Load() {
		// Only now: what a run counts is what it committed. A crash
		// before this line is covered by an audit snapshot of the
		// warehouse (see AuditConfig).
		if err := r.publishAudit(ctx, plans); err != nil {
			sum.AuditError = err.Error()
			r.log.Error("the run's warehouse tier counts were not published; count the warehouse with `tributary audit count --tier warehouse`", "err", err)
		}
	}
	if moveErr != nil {
		return sum, fmt.Errorf("run %s is committed, but %w; the next run finishes it", id, moveErr)
	}
	if err := mv.prune(held); err != nil {
		r.log.Warn("pruning old manifests", "err", err)
	}
	return sum, nil
}

// NewRunID names a run by its start time, so runs sort by it, and a random
// suffix.
func NewRunID(t time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// resolveTopics returns the topics to load, sorted, checking that named
// ones exist.
func (r *run) resolveTopics(ctx context.Context, adm *kadm.Client) ([]string, error) {
	tctx, cancel := context.WithTimeout(ctx, r.cfg.BrokerTimeout)
	defer cancel()
	details, err := adm.ListTopics(tctx)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the brokers at %v: %w", r.cfg.Brokers, err)
	}
	var topics []string
	for _, t := range r.cfg.Topics {
		d, ok := details[t]
		if !ok || d.Err != nil {
			return nil, fmt.Errorf("topic %q does not exist on the brokers at %v", t, r.cfg.Brokers)
		}
		topics = append(topics, t)
	}
	if r.cfg.TopicRegex != "" {
		re := regexp.MustCompile("^(?:" + r.cfg.TopicRegex + ")$") // checked by withDefaults
		for name, d := range details {
			if d.Err == nil && !d.IsInternal && name[0] != '_' && re.MatchString(name) && !slices.Contains(topics, name) {
				topics = append(topics, name)
			}
		}
		if len(topics) == 0 {
			return nil, fmt.Errorf("no topic on the brokers at %v matches %q", r.cfg.Brokers, r.cfg.TopicRegex)
		}
	}
	sort.Strings(topics)
	return topics, nil
}

// plan lists each partition's log start and high watermark and decides
// where to read from, recording any range retention deleted before it was
// loaded.
func (r *run) plan(ctx context.Context, adm *kadm.Client, topics []string, state map[string]*TopicState) ([]*partPlan, []LostRange, time.Time, error) {
	tctx, cancel := context.WithTimeout(ctx, r.cfg.BrokerTimeout)
	defer cancel()
	listedAt := r.cfg.Now()
	starts, err := adm.ListStartOffsets(tctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, nil, listedAt, fmt.Errorf("listing log start offsets on the brokers at %v: %w", r.cfg.Brokers, err)
	}
	ends, err := adm.ListEndOffsets(tctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, nil, listedAt, fmt.Errorf("listing high watermarks on the brokers at %v: %w", r.cfg.Brokers, err)
	}
	var plans []*partPlan
	var lost []LostRange
	for _, t := range topics {
		parts := starts[t]
		ids := make([]int32, 0, len(parts))
		for p := range parts {
			ids = append(ids, p)
		}
		slices.Sort(ids)
		for _, p := range ids {
			logStart := parts[p].Offset
			end, ok := ends.Lookup(t, p)
			if !ok {
				return nil, nil, listedAt, fmt.Errorf("%s/%d: no high watermark listed", t, p)
			}
			pl := &partPlan{topic: t, part: p, end: end.Offset}
			var prev *PartitionState
			if ts := state[t]; ts != nil {
				prev = ts.Partitions[p]
			}
			pl.prev = prev
			switch {
			case prev == nil:
				pl.start = logStart
				if r.cfg.StartAt == Latest {
					pl.start = end.Offset
				}
			case prev.Next < logStart:
				l := LostRange{Topic: t, Partition: p, From: prev.Next, To: logStart - 1,
					Reason: "deleted by retention before it was loaded"}
				pl.start = logStart
				if r.cfg.OnDataLoss == Latest {
					l.To = end.Offset - 1
					l.Reason += "; skipped to the high watermark (on data loss: latest)"
					pl.start = end.Offset
				}
				if r.cfg.OnDataLoss == Fail {
					return nil, nil, listedAt, fmt.Errorf("data loss: %s (on data loss: fail; rerun with earliest or latest to continue)", l)
				}
				r.log.Error("records lost before they were loaded", "topic", t, "partition", p, "from", l.From, "to", l.To)
				lost = append(lost, l)
			case prev.Next > end.Offset:
				l := LostRange{Topic: t, Partition: p, From: end.Offset, To: prev.Next - 1,
					Reason: "the log ends below the committed offset (topic recreated or truncated); restarting from its log start"}
				if r.cfg.OnDataLoss == Fail {
					return nil, nil, listedAt, fmt.Errorf("offset mismatch: %s (on data loss: fail)", l)
				}
				pl.start = logStart
				if r.cfg.OnDataLoss == Latest {
					pl.start = end.Offset
					l.Reason = "the log ends below the committed offset (topic recreated or truncated); continuing from its high watermark"
				}
				r.log.Error("committed offset past the end of the log", "topic", t, "partition", p, "committed", prev.Next, "end", end.Offset)
				lost = append(lost, l)
			default:
				pl.start = prev.Next
			}
			pl.next = pl.start
			plans = append(plans, pl)
		}
	}
	return plans, lost, listedAt, nil
}

// stallTimeout fails a run whose fetches bring nothing while partitions
// are still behind: brokers gone, or a partition's leader unavailable.
const stallTimeout = 30 * time.Second

// fetch reads every partition from start to end (or the limits) and hands
// the records to one writer goroutine per partition.
func (r *run) fetch(ctx context.Context, kcl *kgo.Client, adm *kadm.Client, plans []*partPlan) error {
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
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(r.cfg.Brokers...),
		kgo.ConsumePartitions(offsets),
		// Out of range means retention deleted what was next; the gap is
		// detected and reported below.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxPartitionBytes(8<<20),
		kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.RequestTimeoutOverhead(r.cfg.BrokerTimeout),
	)
	if err != nil {
		return err
	}
	defer cl.Close()

	wctx, wcancel := context.WithCancelCause(ctx)
	defer wcancel(nil)
	var wg sync.WaitGroup
	var werrMu sync.Mutex
	var werr error
	for _, pl := range plans {
		if pl.done {
			continue
		}
		in := make(chan []*kgo.Record, 4)
		pl.in = in // the fetch loop's end of it; it closes and clears it
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pl.writer.run(wctx, in); err != nil {
				werrMu.Lock()
				if werr == nil {
					werr = err
				}
				werrMu.Unlock()
				wcancel(err)
				pl.writer.abandon()
				for range in { // let the fetch loop go on to see the error
				}
			}
		}()
	}
	closeAll := func() {
		for _, pl := range plans {
			if pl.in != nil {
				close(pl.in)
				pl.in = nil
			}
		}
		wg.Wait()
	}

	fetchErr := r.fetchLoop(wctx, cl, adm, plans, byTP, remaining)
	if fetchErr != nil {
		wcancel(fetchErr) // writers abandon their files
	}
	closeAll()
	if werr != nil && !errors.Is(werr, fetchErr) {
		return werr
	}
	if fetchErr != nil {
		return fetchErr
	}
	for _, pl := range plans {
		r.sum.Records += pl.writer.records
		r.sum.Bytes += pl.writer.bytes
		r.sum.Errors += pl.writer.errCount
		r.sum.NoHeaderTime += pl.writer.noHeader
	}
	return nil
}

func (r *run) fetchLoop(ctx context.Context, cl *kgo.Client, adm *kadm.Client, plans []*partPlan, byTP map[string]map[int32]*partPlan, remaining int) error {
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
			var batch []*kgo.Record
			for _, rec := range fp.Records {
				if rec.Offset < pl.next || rec.Offset >= pl.end {
					continue
				}
				if rec.Offset > pl.next {
					r.checkGap(ctx, adm, pl, rec.Offset)
				}
				batch = append(batch, rec)
				pl.next = rec.Offset + 1
				pl.records++
				pl.inputBytes += int64(len(rec.Value))
				total++
				if r.cfg.MaxRecords > 0 && total >= r.cfg.MaxRecords {
					stop = true
					break
				}
			}
			if len(batch) > 0 {
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
func (r *run) checkGap(ctx context.Context, adm *kadm.Client, pl *partPlan, got int64) {
	tctx, cancel := context.WithTimeout(ctx, r.cfg.BrokerTimeout)
	defer cancel()
	starts, err := adm.ListStartOffsets(tctx, pl.topic)
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

// manifest builds the run's commit record: files, the topics' new state,
// and the hours that are now complete.
func (r *run) manifest(plans []*partPlan, state map[string]*TopicState, listedAt time.Time) *Manifest {
	m := &Manifest{Version: manifestVersion, Run: r.id, Started: r.started, Topics: map[string]*TopicState{}, Lost: r.sum.Lost}
	hours := map[string]map[string]bool{}
	for _, pl := range plans {
		ts := m.Topics[pl.topic]
		if ts == nil {
			ts = &TopicState{Partitions: map[int32]*PartitionState{}}
			if prev := state[pl.topic]; prev != nil {
				for p, ps := range prev.Partitions {
					c := *ps
					ts.Partitions[p] = &c
				}
			}
			m.Topics[pl.topic] = ts
			hours[pl.topic] = map[string]bool{}
			if prev := state[pl.topic]; prev != nil {
				for _, h := range prev.PendingHours {
					hours[pl.topic][h] = true
				}
			}
		}
		ps := &PartitionState{Next: pl.next}
		if pl.prev != nil {
			ps.Progress = pl.prev.Progress
		}
		switch {
		case pl.next >= pl.end:
			ps.Progress = max(ps.Progress, listedAt.UnixMilli())
		case pl.writer.records > 0:
			ps.Progress = max(ps.Progress, pl.writer.lastTime)
		}
		ts.Partitions[pl.part] = ps
		m.Files = append(m.Files, pl.writer.files...)
		for h := range pl.writer.hours {
			hours[pl.topic][h] = true
		}
		r.sum.InputBytes += pl.inputBytes
		r.sum.Partitions = append(r.sum.Partitions, PartitionSummary{
			Topic: pl.topic, Partition: pl.part, From: pl.start, To: pl.next, End: pl.end,
			Records: pl.records - pl.writer.errCount, Errors: pl.writer.errCount,
		})
	}
	grace := r.cfg.SuccessGrace.Milliseconds()
	for topic, ts := range m.Topics {
		minProgress := int64(-1)
		for _, ps := range ts.Partitions {
			if minProgress < 0 || ps.Progress < minProgress {
				minProgress = ps.Progress
			}
		}
		for h := range hours[topic] {
			start, err := hourStart(h)
			if err != nil {
				continue
			}
			if start.Add(time.Hour).UnixMilli()+grace <= minProgress {
				m.Markers = append(m.Markers, h)
			} else {
				ts.PendingHours = append(ts.PendingHours, h)
			}
		}
		sort.Strings(ts.PendingHours)
	}
	sort.Strings(m.Markers)
	return m
}
