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
	cfg Config
	id  string
	w   warehouse.FS
	// batch is w for the run's own files and moves: their names are
	// made durable together, before the commit and after the moves.
	batch  *warehouse.Batch
	deser  *schema.Deserializer
	reg    schema.Registry
	tables *tables // Parquet loads only: each topic's table schema
	// tableBase is each Iceberg table's current snapshot when the run
	// began (Config.Table).
	tableBase map[string]int64
	cat       iceCatalog // Config.Table's catalog
	headers   *schema.HeaderLayouts
	log       *slog.Logger
	started   time.Time
	sum       *Summary
	adm       *kadm.Client

	locks []*warehouse.Lock
	held  map[string]bool // the topics of locks
	// base is the highest commit number when the run read its topics'
	// state: a commit after it holding them rules the run's commit out
	// (fence.go).
	base int64
	// leases are a partition-sharing run's partition locks (share.go);
	// cancel ends the run when any lock is lost.
	leases []string
	cancel context.CancelCauseFunc

	errCount atomic.Int64
	crashed  atomic.Bool
	// commitUnknown: a table commit failed without saying whether it
	// happened (a lost answer); the run's directory stays for recovery,
	// which asks the table.
	commitUnknown bool
	// republish makes publishAudit publish counts already marked
	// published too (PublishAudit).
	republish bool
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

// Run performs one load run (see the package documentation). It returns
// the run's summary even on failure, with Committed saying whether the
// run's data is in the warehouse.
func Run(ctx context.Context, c Config) (*Summary, error) {
	cfg, err := c.withDefaults()
	if err != nil {
		return &Summary{}, fmt.Errorf("load: %w", err)
	}
	r := newRun(cfg)
	sum := r.sum
	defer func() { sum.Finished = cfg.Now() }()

	disconnect, err := r.connect()
	defer disconnect()
	if err != nil {
		return sum, err
	}
	topics, err := r.resolveTopics(ctx)
	if err != nil {
		return sum, err
	}
	ctx, unlock, err := r.lockTopics(ctx, topics)
	defer unlock()
	if err != nil {
		return sum, err
	}
	if !r.sharePartitions() {
		if topics = r.heldTopics(topics); len(topics) == 0 {
			r.log.Info("every topic is being loaded by another run; nothing to do", "skipped", len(sum.Skipped))
			return sum, nil
		}
	}

	mv := r.newMover()
	if sum.Recovered, sum.Discarded, err = mv.recoverRuns(r.held); err != nil {
		return sum, fmt.Errorf("recovering earlier runs: %w", err)
	}
	if r.cfg.Audit != nil {
		// Counts of committed runs cut short before they published
		// go out now, whether or not this run gets to commit.
		if err := r.publishAudit(ctx); err != nil {
			if r.crashed.Load() {
				return sum, err
			}
			r.log.Warn("earlier runs' warehouse tier counts were not published; retrying after this run's commit", "err", err)
		}
	}
	state, base, err := loadState(r.w, topics)
	if err != nil {
		return sum, fmt.Errorf("reading committed offsets: %w", err)
	}
	r.base = base
	if r.cfg.Table != "" {
		if err := r.tableStates(topics, state); err != nil {
			return sum, fmt.Errorf("reading committed offsets: %w", err)
		}
	}
	plans, lost, listedAt, err := r.plan(ctx, topics, state)
	if err != nil {
		return sum, err
	}
	if r.sharePartitions() {
		if plans, lost, err = r.leasePartitions(ctx, plans, lost); err != nil {
			return sum, err
		}
		if len(plans) == 0 {
			r.log.Info("no free partition with records to load; nothing to do", "skipped", len(sum.Skipped))
			return sum, nil
		}
		topics = planTopics(plans)
	}
	sum.Lost = lost

	if err := writeJSON(r.batch, path.Join(runDir(r.id), runInfoName), runInfo{Run: r.id, Topics: topics, Started: r.started, Locks: r.leases}); err != nil {
		return sum, fmt.Errorf("starting run directory in %s: %w", r.w, err)
	}
	defer func() {
		if !sum.Committed && !r.crashed.Load() && !r.commitUnknown {
			// Best effort: recovery deletes it otherwise.
			removeRunDir(r.w, r.id)
		}
	}()
	if err := r.fetch(ctx, plans); err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		return sum, err
	}
	if r.sharePartitions() {
		if state, err = r.lockForCommit(ctx, topics, plans); err != nil {
			return sum, err
		}
	}
	m := r.manifest(plans, state, listedAt)
	if err := r.checkHours(m); err != nil {
		return sum, err
	}
	if err := r.prepareTables(ctx, m, plans); err != nil {
		return sum, err
	}
	if err := r.commit(m); err != nil {
		return sum, err
	}
	return sum, r.afterCommit(ctx, mv, m)
}

func newRun(cfg Config) *run {
	started := cfg.Now()
	id := cfg.RunID
	if id == "" {
		id = NewRunID(started)
	}
	return &run{cfg: cfg, id: id, log: cfg.Logger.With("run", id), started: started,
		sum: &Summary{Run: id, Started: started}}
}

// connect opens the warehouse (unless the configuration brings one), the
// schema registry and the brokers. disconnect must be called even when
// err is not nil.
func (r *run) connect() (disconnect func(), err error) {
	var closers []func()
	disconnect = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	r.w = r.cfg.FS
	if r.w == nil {
		if r.w, err = warehouse.OpenWith(r.cfg.Warehouse, r.cfg.WarehouseOptions); err != nil {
			return disconnect, err
		}
		w := r.w
		closers = append(closers, func() { w.Close() })
	}
	r.sum.Warehouse = r.w.String()
	r.batch = warehouse.NewBatch(r.w)
	if r.cfg.Table != "" {
		if r.cat, err = r.cfg.Catalog.open(r.batch); err != nil {
			return disconnect, err
		}
	}

	reg := r.cfg.Registry
	if reg == nil {
		if reg, err = sr.NewClient(append([]sr.ClientOpt{sr.URLs(r.cfg.RegistryURL), sr.HTTPClient(&http.Client{Timeout: r.cfg.BrokerTimeout})}, r.cfg.srOpts...)...); err != nil {
			return disconnect, fmt.Errorf("schema registry %s: %w", r.cfg.RegistryURL, err)
		}
	}
	if r.deser, err = schema.NewDeserializer(reg, schema.DeserializerConfig{}); err != nil {
		return disconnect, err
	}
	r.reg = reg
	if r.cfg.Format == FormatParquet {
		r.tables = &tables{r: r, by: map[string]*topicTable{}}
	}
	r.headers = schema.NewHeaderLayouts(r.deser, r.cfg.HeaderField)

	kcl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(r.cfg.Brokers...), kgo.RequestTimeoutOverhead(r.cfg.BrokerTimeout)}, r.cfg.kgoOpts...)...)
	if err != nil {
		return disconnect, fmt.Errorf("brokers %v: %w", r.cfg.Brokers, err)
	}
	closers = append(closers, kcl.Close)
	r.adm = kadm.NewClient(kcl)
	return disconnect, nil
}

// lockTopics takes the lock of every topic (with Config.Share, of those
// free, at most Config.MaxTopics), so that one run at a time loads a topic,
// across processes and machines. The context it returns is
// cancelled when a lock is lost. unlock must be called even when err is
// not nil; a run that crashed abandons its locks instead of releasing
// them, as a dead process would.
func (r *run) lockTopics(ctx context.Context, topics []string) (_ context.Context, unlock func(), err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	r.cancel = cancel
	unlock = func() {
		cancel(nil)
		for _, l := range r.locks {
			if r.crashed.Load() {
				l.Abandon()
			} else {
				l.Release()
			}
		}
	}
	r.held = make(map[string]bool, len(topics))
	if r.sharePartitions() {
		return ctx, unlock, nil // leases now, topic locks at the commit
	}
	for _, t := range r.lockOrder(topics) {
		if r.cfg.MaxTopics > 0 && len(r.locks) >= r.cfg.MaxTopics {
			break
		}
		l, err := warehouse.AcquireLock(r.w, topicLockName(t), r.cfg.Holder+" run "+r.id, r.cfg.LockTTL)
		if r.skipLocked(t, err) {
			continue
		}
		if err != nil {
			return ctx, unlock, fmt.Errorf("topic %s: %w", t, err)
		}
		r.locks = append(r.locks, l)
		r.held[t] = true
	}
	for _, l := range r.locks {
		r.watch(ctx, l)
	}
	return ctx, unlock, nil
}

// watch ends the run when l is lost.
func (r *run) watch(ctx context.Context, l *warehouse.Lock) {
	go func() {
		select {
		case <-l.Lost():
			r.cancel(fmt.Errorf("lost the lock on %s: %w", l.Name(), l.Err()))
		case <-ctx.Done():
		}
	}()
}

// NewRunID names a run by its start time, so runs sort by it, and a random
// suffix.
func NewRunID(t time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
