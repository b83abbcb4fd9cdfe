package loader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// A run becomes visible in one step: the exclusive create of its commit,
// _tributary/commits/<seq>.json (publish, fence.go, which also says why
// that create is the fence against a run paused past its leases).
// Everything before it stays in the run's own directory; everything after
// it (moving files into place, _SUCCESS markers) is repeatable, so that
// whoever takes the topics' locks next finishes a run cut short
// (mover.recoverRuns), or deletes it if it never reached the commit.

// commit makes the run's data part of the warehouse. The topics' locks
// keep anyone else from committing them meanwhile and are checked once
// more before the commit, so that a run that knows it lost one stops
// early; the commit itself refuses if another run committed the topics
// after this run's base, which holds even when the run was paused after
// that check.
func (r *run) commit(m *Manifest) error {
	m.Committed = r.cfg.Now()
	staged := path.Join(runDir(r.id), manifestName)
	if len(m.Tables) > 0 {
		return r.commitWithTables(m, staged)
	}
	// Every file the manifest names was synced when closed; their names
	// become durable here, all at once, before the commit.
	if err := r.batch.Sync(); err != nil {
		return fmt.Errorf("writing the run's files: %w", err)
	}
	if err := r.hook(FaultBeforeCommit); err != nil {
		return err
	}
	if err := r.checkLocks(); err != nil {
		return err
	}
	err := publish(r.batch, m, r.base, true, staged, func() error { return r.hook(FaultCommitPoint) })
	if err != nil {
		var conflict *CommitConflictError
		if errors.As(err, &conflict) || r.crashed.Load() {
			return err
		}
		return fmt.Errorf("committing run %s in %s: %w", r.id, r.w, err)
	}
	r.committed()
	return nil
}

// checkLocks returns an error if the run lost a lock or its directory is
// being discarded.
func (r *run) checkLocks() error {
	for _, l := range r.locks {
		if err := l.Check(); err != nil {
			return fmt.Errorf("not committing: %w", err)
		}
	}
	return checkNotDiscarded(r.w, r.id)
}

func (r *run) committed() {
	r.sum.Committed = true
	r.log.Info("run committed", "records", r.sum.Records, "files", r.sum.Files, "errors", r.sum.Errors, "lost_ranges", len(r.sum.Lost))
}

// afterCommit moves the committed run's files into place, publishes its
// audit counts and prunes superseded manifests. A failure here leaves the
// run committed: the next run finishes it.
func (r *run) afterCommit(ctx context.Context, mv *mover, m *Manifest) error {
	if err := r.hook(FaultAfterCommit); err != nil {
		return err
	}
	if err := mv.finish(m); err != nil {
		return fmt.Errorf("run %s is committed, but %w; the next run finishes it", r.id, err)
	}
	if r.cfg.Audit != nil {
		// The counts are in the committed manifest: publishing them
		// may fail or be cut short, and the next run publishes them.
		if err := r.publishAudit(ctx); err != nil {
			var crash errCrash
			if errors.As(err, &crash) {
				return err
			}
			r.sum.AuditError = err.Error()
			r.log.Error("the warehouse tier's counts were not published; they are in the run's manifest, and the next run with --audit publishes them", "err", err)
		} else if r.cfg.CompleteBy == CompleteByAudit {
			if err := r.completeHours(ctx, m); err != nil {
				r.sum.AuditError = err.Error()
				r.log.Error("hours not marked complete; the next run tries again", "err", err)
			}
		}
	}
	if err := mv.prune(r.held); err != nil {
		r.log.Warn("pruning old manifests", "err", err)
	}
	r.expireTables(ctx, m)
	return nil
}

// newMover returns the mover for this run's recovery and moves. Recovery
// may also clean up a dead run over more topics than this run holds: it
// takes their locks too, without waiting, and lets them go when done.
func (r *run) newMover() *mover {
	cat := r.cat
	if cat == nil { // a run without tables recovering one with
		cat = hadoopCatalog{w: r.batch}
	}
	return &mover{w: r.batch, cat: cat, log: r.log, id: r.id, now: r.cfg.Now, grace: r.cfg.SuccessGrace, fault: r.hook, tryLock: func(names []string) (func(), bool) {
		var extra []*warehouse.Lock
		release := func() {
			for _, l := range extra {
				l.Release()
			}
		}
		for _, name := range names {
			l, err := warehouse.AcquireLock(r.w, name, r.cfg.Holder+" run "+r.id+" (recovery)", r.cfg.LockTTL)
			if err != nil {
				release()
				return nil, false
			}
			extra = append(extra, l)
		}
		return release, true
	}}
}

// mover finishes committed runs: it moves files into place, writes
// _SUCCESS markers and removes the run's directory. Every step may be
// repeated, so a run cut short at any point is finished by the next.
type mover struct {
	w     *warehouse.Batch // moves and markers are made durable together
	cat   iceCatalog       // of a run's tables: recovery reads and finishes their commits
	log   *slog.Logger
	id    string           // the run recovering, named in fences
	now   func() time.Time // Config.Now
	grace time.Duration    // Config.SuccessGrace, for what _SUCCESS says
	fault func(FaultPoint) error
	// tryLock takes locks this run does not hold (of topics, or a
	// partition-sharing run's partition leases), without waiting, so that
	// a dead run over more topics than this one can be cleaned up too; ok
	// is false if any is held by a live run.
	tryLock func(names []string) (release func(), ok bool)
}

// owns reports whether the mover may act on a run over topics: they are
// all held, or the missing ones could be locked (then release must be
// called when done).
func (mv *mover) owns(topics []string, held map[string]bool) (release func(), ok bool) {
	var missing []string
	for _, t := range topics {
		if !held[t] {
			missing = append(missing, topicLockName(t))
		}
	}
	if len(missing) == 0 {
		return func() {}, true
	}
	if mv.tryLock == nil {
		return nil, false
	}
	return mv.tryLock(missing)
}

func (mv *mover) finish(m *Manifest) error {
	// The moves are independent, so they run side by side (on HDFS each
	// is a NameNode round trip); in a local warehouse they are plain
	// renames, made durable together by one Sync of the batch, each
	// directory fsynced once. The first goes alone, so that a crash test
	// can stop a run after it.
	move := func(f FileEntry) error {
		if err := mv.move(f); err != nil {
			return fmt.Errorf("run %s: moving %s into place: %w", m.Run, f.Final, err)
		}
		return nil
	}
	rest := m.Files
	if len(rest) > 0 {
		if err := move(rest[0]); err != nil {
			return err
		}
		if mv.fault != nil {
			if err := mv.fault(FaultMidMove); err != nil {
				return errCrash{err}
			}
		}
		rest = rest[1:]
	}
	var g errgroup.Group
	g.SetLimit(parallelMoves)
	for _, f := range rest {
		g.Go(func() error { return move(f) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// A marker says its hour is complete: the moves must be durable first.
	if err := mv.w.Sync(); err != nil {
		return fmt.Errorf("run %s: %w", m.Run, err)
	}
	if err := mv.writeLate(m); err != nil {
		return err
	}
	for _, dir := range m.Markers {
		g.Go(func() error {
			marker := path.Join(dir, warehouse.SuccessName)
			ok, err := warehouse.Exists(mv.w, marker)
			if err != nil {
				return fmt.Errorf("run %s: %w", m.Run, err)
			}
			if !ok {
				if err := warehouse.WriteFile(mv.w, marker, mv.progressMarker(m, dir)); err != nil {
					return fmt.Errorf("run %s: writing %s: %w", m.Run, marker, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := mv.w.Sync(); err != nil {
		return fmt.Errorf("run %s: %w", m.Run, err)
	}
	if err := mv.w.RemoveAll(runDir(m.Run)); err != nil {
		return fmt.Errorf("run %s: removing its directory: %w", m.Run, err)
	}
	return nil
}

// parallelMoves bounds the moves (and markers) a run makes at once.
const parallelMoves = 8

// move puts one file in place. Already moved is fine; missing from both
// places means the warehouse lost a committed file, which is reported.
func (mv *mover) move(f FileEntry) error {
	err := mv.w.Rename(f.Tmp, f.Final)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if ok, serr := warehouse.Exists(mv.w, f.Final); serr != nil {
		return serr
	} else if ok {
		return nil // moved by an earlier attempt
	}
	return fmt.Errorf("committed file is in neither %s nor %s", f.Tmp, f.Final)
}

// recoverRuns finishes every committed run and deletes every uncommitted
// one whose owner is dead: one whose topics are all held by this run or
// could be locked now (a live owner would hold them). It returns the runs
// it recovered and discarded.
func (mv *mover) recoverRuns(held map[string]bool) (recovered, discarded []string, err error) {
	runs, err := mv.w.ReadDir(runsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("listing %s in %s: %w", runsDir, mv.w, err)
	}
	if len(runs) == 0 {
		return nil, nil, nil
	}
	pending := make(map[string]fs.FileInfo, len(runs))
	for _, fi := range runs {
		pending[fi.Name()] = fi
	}
	commits, last, err := listCommitLog(mv.w)
	if err != nil {
		return nil, nil, err
	}
	committed := make(map[string]bool, len(commits))
	for _, c := range commits {
		var m *Manifest
		run := c.run
		if run == "" { // named by number alone: the manifest says
			if m, err = readManifest(mv.w, c.name); errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return nil, nil, err
			}
			run = m.Run
		}
		committed[run] = true
		if pending[run] == nil {
			continue // finished
		}
		if m == nil {
			if m, err = readManifest(mv.w, c.name); errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return nil, nil, err
			}
		}
		release, ok := mv.owns(m.topicNames(), held)
		if !ok {
			continue // a live run's, in its move phase
		}
		mv.log.Warn("finishing a committed run that was cut short", "run", m.Run, "files", len(m.Files))
		err = mv.finish(m)
		release()
		if err != nil {
			return nil, nil, err
		}
		recovered = append(recovered, m.Run)
	}
	for name, fi := range pending {
		if committed[name] {
			continue
		}
		var info runInfo
		err := readJSON(mv.w, path.Join(runDir(name), runInfoName), &info)
		release := func() {}
		switch {
		case err == nil:
			var ok bool
			if release, ok = mv.owns(info.Topics, held); !ok {
				continue // a live run's
			}
			if len(info.Locks) > 0 {
				// A partition-sharing run holds no topic lock while it
				// fetches: its partition leases say whether it lives.
				leases, ok := mv.tryLock(info.Locks)
				if !ok {
					release()
					continue
				}
				topicsRelease := release
				release = func() { leases(); topicsRelease() }
			}
		case errors.Is(err, fs.ErrNotExist) || isSyntaxError(err):
			// Killed before its run.json was complete: it cannot have
			// written anything else. Leave a fresh one to its owner.
			if time.Since(fi.ModTime()) < time.Hour {
				continue
			}
		default:
			return nil, nil, err
		}
		tm, inTable, err := mv.tableRun(name)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("run %s: %w", name, err)
		}
		if inTable {
			err = mv.finishTables(tm)
			if err == nil {
				err = mv.finish(tm)
			}
			release()
			if err != nil {
				return nil, nil, err
			}
			recovered = append(recovered, name)
			continue
		}
		if info.Run != "" {
			// The run may only be paused: fence it first, and finish it
			// instead if it committed before the fence.
			m, err := mv.fence(name, info.Topics, last)
			if err != nil {
				release()
				return nil, nil, err
			}
			if m != nil {
				err = mv.finish(m)
				release()
				if err != nil {
					return nil, nil, err
				}
				recovered = append(recovered, name)
				continue
			}
		}
		mv.log.Warn("deleting the files of an uncommitted run", "run", name)
		if tm != nil {
			if err := mv.discardTables(tm); err != nil {
				release()
				return nil, nil, fmt.Errorf("deleting uncommitted run %s: %w", name, err)
			}
		}
		err = removeRunDir(mv.w, name)
		release()
		if err != nil {
			return nil, nil, fmt.Errorf("deleting uncommitted run %s: %w", name, err)
		}
		discarded = append(discarded, name)
	}
	sort.Strings(recovered)
	sort.Strings(discarded)
	return recovered, discarded, nil
}

// removeRunDir deletes an uncommitted run's directory with its run.json
// last: a deletion cut short (its process killed) then leaves a directory
// recovery still knows as that run's, rather than files without a
// run.json, which recovery leaves alone for an hour as those of a run
// still starting. Its DISCARDED marker (fence.go) goes after the run.json,
// so that the run, if alive, sees one or the other missing until the end.
func removeRunDir(w warehouse.FS, run string) error {
	dir := runDir(run)
	entries, err := w.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != runInfoName && e.Name() != discardedName {
			if err := w.RemoveAll(path.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := w.Remove(path.Join(dir, runInfoName)); err != nil {
		return err
	}
	return w.RemoveAll(dir)
}

func isSyntaxError(err error) bool {
	var se *json.SyntaxError
	var ue *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &ue)
}
