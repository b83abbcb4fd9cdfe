package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// Runner runs jobs: one attempt at a time under the job's lock, recorded
// in its history, retried with backoff.
type Runner struct {
	// StateDir keeps the history of attempts that could not reach their
	// warehouse. Default DefaultStateDir().
	StateDir string
	// Logger receives one line per attempt. Default slog.Default().
	Logger *slog.Logger
	// Fault is passed to every load run (crash and timing tests).
	Fault func(loader.FaultPoint) error
	// Holder describes this process in lock files, e.g. "jobs daemon".
	Holder string
	// Metrics, if set, records every attempt (see metrics.go).
	Metrics *Metrics
}

// ErrBusy is returned (wrapped around the *warehouse.LockedError naming the
// holder) when the job is already running elsewhere.
var ErrBusy = errors.New("job is already running")

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

func (r *Runner) stateDir() string {
	if r.StateDir != "" {
		return r.StateDir
	}
	return DefaultStateDir()
}

// RunOnce makes one attempt at the job, unless it is running elsewhere
// (then it returns an error wrapping ErrBusy and records nothing).
func (r *Runner) RunOnce(ctx context.Context, spec *Spec, trigger string, attempt int) (*Entry, error) {
	host, _ := os.Hostname()
	e := &Entry{Job: spec.Name, Attempt: attempt, Trigger: trigger, Host: host, PID: os.Getpid(), Started: time.Now(), Outcome: Failed}
	log := r.logger().With("job", spec.Name, "attempt", attempt)
	finish := func(w warehouse.FS, err error) (*Entry, error) {
		e.Finished = time.Now()
		if err != nil {
			e.Error = err.Error()
		}
		r.Metrics.observe(e)
		if rerr := record(w, r.stateDir(), e); rerr != nil {
			log.Error("could not record the attempt in the history", "err", rerr)
		}
		if err != nil {
			log.Error("job run failed", "run", e.Run, "err", err)
		} else {
			log.Info("job run committed", "run", e.Run, "records", e.Records, "bytes", e.Bytes, "lost_ranges", len(e.Lost))
		}
		return e, err
	}

	w, err := warehouse.OpenWith(spec.Warehouse, warehouse.Options{HDFS: spec.HDFS, S3: spec.S3})
	if err != nil {
		return finish(nil, err)
	}
	defer w.Close()
	holder := r.Holder
	if holder == "" {
		holder = "tributary jobs"
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A shared job runs in several daemons at once: its runs divide the
	// topics through the topic locks, and take no job lock.
	if spec.Share == nil {
		lock, err := warehouse.AcquireLock(w, "job-"+spec.Name, holder, spec.lockTTL())
		var locked *warehouse.LockedError
		if errors.As(err, &locked) {
			return e, fmt.Errorf("%w: %w", ErrBusy, err)
		}
		if err != nil {
			return finish(w, err)
		}
		defer lock.Release()
		go func() {
			select {
			case <-lock.Lost():
				cancel(fmt.Errorf("lost the job lock: %w", lock.Err()))
			case <-runCtx.Done():
			}
		}()
	}
	// A run's span in the history is the span it held the job's lock, so
	// spans of one unshared job never overlap.
	e.Started = time.Now()

	cfg := spec.LoadConfig()
	cfg.FS = w
	cfg.Fault = r.Fault
	cfg.Logger = log
	cfg.Holder = holder + " job " + spec.Name
	sum, err := loader.Run(runCtx, cfg)
	e.fill(sum)
	if err == nil && spec.Files.Compact {
		err = compactMarked(runCtx, w, cfg, sum.Markers)
	}
	if err != nil && context.Cause(runCtx) != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w (%v)", err, context.Cause(runCtx))
	}
	return finish(w, err)
}

// Run runs the job and retries a failed attempt with exponential backoff,
// as many times as the spec says. It returns every attempt made.
func (r *Runner) Run(ctx context.Context, spec *Spec, trigger string) ([]*Entry, error) {
	retries, backoff, maxBackoff := spec.retries()
	var entries []*Entry
	for attempt := 1; ; attempt++ {
		e, err := r.RunOnce(ctx, spec, trigger, attempt)
		if errors.Is(err, ErrBusy) {
			return entries, err
		}
		entries = append(entries, e)
		if err == nil || attempt > retries || ctx.Err() != nil {
			return entries, err
		}
		r.logger().Warn("retrying the job after a failed run", "job", spec.Name, "in", backoff, "attempt", attempt+1, "of", retries+1)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return entries, err
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// Daemon runs every job on its schedule until its context ends.
type Daemon struct {
	Runner *Runner
	Specs  []*Spec
	Logger *slog.Logger
}

// Run blocks until ctx ends. A run in progress then stops without
// committing (the next run loads its records).
func (d *Daemon) Run(ctx context.Context) error {
	if len(d.Specs) == 0 {
		return errors.New("no jobs to run")
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	done := make(chan struct{}, len(d.Specs))
	for _, s := range d.Specs {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				next := s.Sched.Next(time.Now())
				log.Debug("next run", "job", s.Name, "at", next)
				select {
				case <-time.After(time.Until(next)):
				case <-ctx.Done():
					return
				}
				if _, err := d.Runner.Run(ctx, s, "schedule"); errors.Is(err, ErrBusy) {
					log.Info("job skipped: running elsewhere", "job", s.Name, "err", err)
				}
			}
		}()
	}
	for range d.Specs {
		<-done
	}
	return nil
}

// compactMarked merges the small files of the hours a run has just marked
// complete, topic by topic. The run is committed whatever happens here; a
// failure fails the attempt so that it is seen and retried (the retry's
// load finds nothing new).
func compactMarked(ctx context.Context, w warehouse.FS, cfg loader.Config, markers []string) error {
	hours := map[string][]time.Time{}
	for _, m := range markers {
		topic, _, _ := strings.Cut(m, "/")
		start, err := warehouse.HourStart(m)
		if err != nil {
			continue
		}
		hours[topic] = append(hours[topic], start)
	}
	topics := slices.Sorted(maps.Keys(hours))
	for _, topic := range topics {
		if _, err := loader.Compact(ctx, loader.CompactConfig{FS: w, Topic: topic, Hours: hours[topic],
			Codec: cfg.Codec, LockTTL: cfg.LockTTL, Logger: cfg.Logger}); err != nil {
			return fmt.Errorf("the run is committed; compacting its completed hours of %s: %w", topic, err)
		}
	}
	return nil
}
