package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Mirror copies the configured sources into the target. Create it with New,
// run it with Run; Status and Handler report on it from any goroutine.
type Mirror struct {
	cfg     *compiled
	lastAck atomic.Int64

	mu      sync.Mutex
	sources []*source
	started time.Time
	meter   meter
	events  *events
}

// New checks cfg (cluster names, regular expressions, URLs) without
// connecting to anything.
func New(cfg Config) (*Mirror, error) {
	c, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	return &Mirror{cfg: c, events: newEvents()}, nil
}

// Run connects to every source and the target and copies until ctx ends,
// then stops: it waits up to Config.ShutdownTimeout for the target to
// acknowledge what was sent and leaves the groups. It
// returns nil after ctx ended, or the error that stopped the mirror: a
// source that cannot be reached at start, a topic that cannot be mirrored
// (strict partitions), schema-registry envelopes with no registry to
// translate their ids. A record that cannot be copied stops its partition
// only (see Status).
func (m *Mirror) Run(ctx context.Context) error {
	log := m.cfg.Logger
	tgt, err := newTarget(m.cfg, m.events.failures.WithLabelValues("target"))
	if err != nil {
		return err
	}
	running := false // from then on, the shutdown below closes everything
	defer func() {
		if !running {
			tgt.client.Close()
		}
	}()

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	commitCtx, endCommits := context.WithCancel(context.WithoutCancel(ctx))
	defer endCommits()
	fail := func(err error) { stop(err) }

	var sources []*source
	var closeOnce sync.Once
	closeSources := func() {
		closeOnce.Do(func() {
			for _, s := range sources {
				s.close()
			}
		})
	}
	defer func() {
		if !running {
			closeSources()
		}
	}()
	for _, sc := range m.cfg.Sources {
		s := &source{Source: sc, cfg: m.cfg, log: log.With("source", sc.Name), tgt: tgt, fail: fail, lastAck: &m.lastAck, events: m.events, runCtx: runCtx, commitCtx: commitCtx}
		if sc.Registry != "" && sc.Registry != m.cfg.TargetRegistry {
			src, err := newRegistryClient(sc.Registry, m.cfg.SourceRegistryOptions...)
			if err != nil {
				return fmt.Errorf("source %s: registry: %w", sc.Name, err)
			}
			dst, err := newRegistryClient(m.cfg.TargetRegistry, m.cfg.TargetRegistryOptions...)
			if err != nil {
				return fmt.Errorf("target registry: %w", err)
			}
			s.schemas = newSchemaMap(src, dst, s.log)
			s.schemas.translated = m.events.translated.WithLabelValues(sc.Name)
		}
		if err := s.connect(runCtx); err != nil {
			return err
		}
		sources = append(sources, s)
	}
	m.lastAck.Store(time.Now().UnixNano())
	m.mu.Lock()
	m.sources, m.started = sources, time.Now()
	m.mu.Unlock()
	log.Info("mirror running", "sources", len(sources), "target", m.cfg.Target, "target_name", m.cfg.TargetName,
		"group", m.cfg.Group, "topics", m.cfg.Topics, "exclude", m.cfg.Exclude)

	running = true
	var wg sync.WaitGroup
	for _, s := range sources {
		wg.Go(func() { s.manage(runCtx) })
		wg.Go(func() { s.consume(runCtx) })
	}
	wg.Go(func() { m.watch(runCtx) })
	<-runCtx.Done()
	wg.Wait()

	// Shut down within ShutdownTimeout whatever the brokers do: what the
	// target does not acknowledge by then is found missing by the next run.
	fctx, cancel := context.WithTimeout(context.Background(), m.cfg.ShutdownTimeout)
	defer cancel()
	// The partitions' transactions commit what the target acknowledges
	// in time; the rest is aborted.
	var fwg sync.WaitGroup
	for _, s := range sources {
		fwg.Go(func() { s.finish(fctx) })
	}
	fwg.Wait()
	endCommits() // a writer still committing gives up: the next run copies it again
	if err := tgt.client.Flush(fctx); err != nil {
		log.Warn("the target did not acknowledge everything before the shutdown timeout; the next run copies the rest",
			"timeout", m.cfg.ShutdownTimeout)
	}
	// Leaving a source's group needs its brokers; one that does not answer
	// is left behind (its session expires).
	closed := make(chan struct{})
	go func() { closeSources(); tgt.client.Close(); close(closed) }()
	select {
	case <-closed:
	case <-fctx.Done():
		log.Warn("a source did not answer the group leave before the shutdown timeout; its session expires on its own")
	}
	cause := context.Cause(runCtx)
	if cause == nil || errors.Is(cause, ctx.Err()) && ctx.Err() != nil {
		log.Info("mirror stopped")
		return nil
	}
	log.Error("mirror stopped", "err", cause)
	return cause
}
