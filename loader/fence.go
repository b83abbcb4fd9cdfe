package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// The fence. A topic's lease keeps a second run from loading it, but a
// run can be paused (GC, SIGSTOP, a slow disk) for longer than its lease
// between its last lock check and its commit; meanwhile another run takes
// the topic over, loads the same range and commits it. The lease alone
// cannot stop the first from committing when it resumes, so the commit
// itself is the fence, on every warehouse and without trusting clocks:
//
//   - Commits are numbered, and commit N is created exclusively under its
//     number alone (commitName): a rename without replace (local:
//     renameat2 RENAME_NOREPLACE; HDFS: rename2 without OVERWRITE) or a PUT
//     with If-None-Match: * (S3). Of two runs that both read commit N-1,
//     one creates N and the other is refused and looks again.
//   - Before creating a number, a run reads every commit after the one it
//     planned from (its base): one holding any of its topics, or naming it
//     in Fenced, means another run loaded them meanwhile, and the run
//     refuses to commit and discards its files (CommitConflictError).
//   - Numbers are only ever created one past the highest existing one, and
//     a pruned commit leaves an empty file (a tombstone) under its name,
//     so a number once taken is never free again: a run that read the
//     commits before a long pause cannot slip into an old number. Once a
//     floor replaces the tombstones, such a number is void and the run
//     takes it back (floor.go).
//   - Recovery deletes a dead-looking run's files only after committing a
//     fence: a commit holding that run's topics' unchanged state and its
//     id in Fenced, made after writing a DISCARDED marker in its
//     directory. A paused run that resumes then finds the fence after its
//     base (or the marker, for a partition-sharing run that reads its
//     base again at its commit) and refuses, instead of committing files
//     that are gone.

// maxCommitAttempts bounds how often a run looks again after another run
// took the number it tried; each time some run committed.
const maxCommitAttempts = 1000

// discardedName marks a run directory whose files recovery is deleting.
const discardedName = "DISCARDED"

// fenceName is where a fence is staged: in the directory of the run it
// fences, which recovery deletes next.
const fenceName = "FENCE.json"

// CommitConflictError is a run's refusal to commit because another run
// committed its topics (or fenced it) after the state it planned from.
type CommitConflictError struct {
	Run   string // the refused run
	Other string // the run whose commit came first
	Seq   int64  // that commit's number
	Topic string // a topic both hold ("" when the other run fenced this one)
}

func (e *CommitConflictError) Error() string {
	if e.Topic == "" {
		return fmt.Sprintf("not committing run %s: run %s discarded its files (commit %d) after its leases ran out; nothing of this run is in the warehouse, and its records are loaded by the runs that hold the topics now",
			e.Run, fenceOwner(e.Other), e.Seq)
	}
	return fmt.Sprintf("not committing run %s: run %s committed topic %s (commit %d) after this run planned its load, so its lease on the topic ran out (was the process paused?) and another run took the topic over; this run's files are discarded, and every record stays in the warehouse once",
		e.Run, fenceOwner(e.Other), e.Topic, e.Seq)
}

// fenceRun names the fence a recovering run commits for a run it discards.
func fenceRun(recovering, discarded string) string {
	return recovering + "-fences-" + discarded
}

// fenceOwner is the run that committed other (the recovering run for a
// fence).
func fenceOwner(other string) string {
	owner, _, _ := strings.Cut(other, "-fences-")
	return owner
}

// conflict reports whether committed, a commit after m's base, rules m
// out.
func conflict(committed, m *Manifest) *CommitConflictError {
	if slices.Contains(committed.Fenced, m.Run) {
		return &CommitConflictError{Run: m.Run, Other: committed.Run, Seq: committed.Seq}
	}
	for _, t := range m.topicNames() {
		if committed.Topics[t] != nil {
			return &CommitConflictError{Run: m.Run, Other: committed.Run, Seq: committed.Seq, Topic: t}
		}
	}
	return nil
}

// publish commits m as the commit after every commit there is: it numbers
// m one past the highest, and creates that commit exclusively. With check,
// it first refuses if a commit after base rules m out (conflict); another
// run taking the number first makes it look again. beforeCreate runs right
// before each create (a fault point, for tests). Local and HDFS
// warehouses get m written to staged (in a run directory) and renamed
// into place, since a create there is not whole at once; S3 gets one
// conditional PUT.
//
// A create whose outcome is unknown (a connection cut) is settled by
// reading the number back, and a commit of m's own run after base means an
// earlier attempt did commit: m is committed once.
func publish(w warehouse.FS, m *Manifest, base int64, check bool, staged string, beforeCreate func() error) error {
	checked := map[string]bool{}
	whole := warehouse.WholeObjectWrites(w)
	written := int64(-1)
	var failed error // the previous create's, neither done nor refused
	for range maxCommitAttempts {
		commits, last, err := listCommitLog(w)
		if err != nil {
			return err
		}
		for _, c := range commits {
			if c.seq <= base || checked[c.name] {
				continue
			}
			cm, err := readManifest(w, c.name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // pruned: a newer commit of its topics is listed too
			}
			if err != nil {
				return err
			}
			checked[c.name] = true
			if cm.Run == m.Run {
				m.Seq = cm.Seq
				return nil // an earlier attempt's, whose answer was lost
			}
			if check {
				if e := conflict(cm, m); e != nil {
					return e
				}
			}
		}
		if failed != nil {
			return failed
		}
		m.Seq = last + 1
		data, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		if !whole && written != m.Seq {
			if err := warehouse.WriteFile(w, staged, data); err != nil {
				return fmt.Errorf("writing the manifest: %w", err)
			}
			if b, ok := w.(*warehouse.Batch); ok {
				if err := b.Sync(); err != nil {
					return fmt.Errorf("writing the manifest: %w", err)
				}
			}
			written = m.Seq
		}
		if beforeCreate != nil {
			if err := beforeCreate(); err != nil {
				return err
			}
		}
		if whole {
			err = w.CreateExclusive(commitName(m.Seq), data)
		} else {
			err = w.RenameNoReplace(staged, commitName(m.Seq))
		}
		if err == nil {
			if b, ok := w.(*warehouse.Batch); ok {
				// The commit is durable before anything follows it.
				if err := b.Sync(); err != nil {
					return fmt.Errorf("commit %d in %s: %w", m.Seq, w, err)
				}
			}
			if void, err := takeBackVoid(w, m.Seq); err != nil || !void {
				return err
			}
			written = -1 // the staged manifest was renamed away
			continue
		}
		if errors.Is(err, fs.ErrExist) {
			continue // another run took the number: look again
		}
		if got, rerr := readManifest(w, commitName(m.Seq)); rerr == nil && got.Run == m.Run {
			if void, err := takeBackVoid(w, m.Seq); err != nil || !void {
				return err
			}
			written = -1
			continue
		}
		failed = fmt.Errorf("creating commit %d in %s: %w", m.Seq, w, err)
		if !check {
			return failed
		}
		// Its staged manifest gone (recovery deleted the run's files)
		// or a connection cut: a fence or conflict, if there is one,
		// says more than this error does.
	}
	return fmt.Errorf("run %s: other runs took the next commit number %d times in a row; try again", m.Run, maxCommitAttempts)
}

// takeBackVoid deletes commit seq, just created, if a floor voids it (its
// tombstone was deleted under a floor while this run was paused before
// its create: floor.go); the run numbers again.
func takeBackVoid(w warehouse.FS, seq int64) (bool, error) {
	void, err := voided(w, seq)
	if err != nil || !void {
		return false, err
	}
	if err := w.Remove(commitName(seq)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("taking back commit %d, made void by the commit floor: %w", seq, err)
	}
	return true, nil
}

// checkNotDiscarded refuses to commit a run whose directory recovery has
// started deleting (a partition-sharing run reads its base afresh at its
// commit, so a fence before that base does not rule it out: the marker,
// or its run.json already gone, does).
func checkNotDiscarded(w warehouse.FS, run string) error {
	data, err := readStateFile(w, path.Join(runDir(run), discardedName))
	if err == nil {
		return &CommitConflictError{Run: run, Other: strings.TrimSpace(string(data))}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if ok, err := warehouse.Exists(w, path.Join(runDir(run), runInfoName)); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("not committing run %s: its run directory was deleted by another run's recovery (its leases ran out); nothing of it is in the warehouse", run)
	}
	return nil
}

// fence commits, before recovery deletes the files of run, a commit that
// rules run out (see the top of this file): the DISCARDED marker first,
// then a commit holding run's topics' current state unchanged and run in
// Fenced. The caller holds the topics' locks. If run committed after
// since, before the fence, fence returns its manifest: it is to be
// finished, not deleted.
func (mv *mover) fence(run string, topics []string, since int64) (*Manifest, error) {
	if err := warehouse.WriteFile(mv.w, path.Join(runDir(run), discardedName), []byte(mv.id+"\n")); err != nil {
		return nil, fmt.Errorf("marking run %s discarded: %w", run, err)
	}
	m, err := mv.publishFence(run, topics)
	if err != nil {
		return nil, fmt.Errorf("fencing run %s before deleting its files: %w", run, err)
	}
	commits, err := listCommits(mv.w)
	if err != nil {
		return nil, err
	}
	for _, c := range commits {
		if c.seq <= since || c.seq >= m.Seq {
			continue
		}
		cm, err := readManifest(mv.w, c.name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if cm.Run == run {
			mv.log.Warn("a run whose leases ran out committed before it was fenced; finishing it", "run", run)
			return cm, nil
		}
	}
	return nil, nil
}

// publishFence commits the fence of run over topics. The state it holds
// must be the topics' newest: if a commit of them (the fenced run's own,
// say) lands between reading it and the create, it reads it again.
func (mv *mover) publishFence(run string, topics []string) (*Manifest, error) {
	for range maxCommitAttempts {
		state, base, err := loadState(mv.w, topics)
		if err != nil {
			return nil, err
		}
		m := &Manifest{Version: manifestVersion, Run: fenceRun(mv.id, run), Topics: map[string]*TopicState{}, Fenced: []string{run}}
		if mv.now != nil {
			m.Started = mv.now()
			m.Committed = m.Started
		}
		for _, t := range topics {
			ts := state[t]
			if ts == nil {
				ts = &TopicState{Partitions: map[int32]*PartitionState{}} // never loaded: reads as nil
			}
			m.Topics[t] = ts
		}
		// Staged in the fenced run's directory, deleted next.
		err = publish(mv.w, m, base, true, path.Join(runDir(run), fenceName), nil)
		var conflict *CommitConflictError
		if errors.As(err, &conflict) {
			continue
		}
		return m, err
	}
	return nil, fmt.Errorf("the topics kept being committed")
}
