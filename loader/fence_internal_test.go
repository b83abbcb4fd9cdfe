package loader

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// These tests need no services: they drive the commit protocol (fence.go)
// directly on a local warehouse.

func localWarehouse(t *testing.T) warehouse.FS {
	t.Helper()
	w, err := warehouse.Open("file://" + t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// stateManifest is a run's manifest holding topic's partition 0 at next.
func stateManifest(run, topic string, next int64) *Manifest {
	return &Manifest{Version: manifestVersion, Run: run, Topics: map[string]*TopicState{
		topic: {Partitions: map[int32]*PartitionState{0: {Next: next}}},
	}}
}

// startRun writes run.json, as a run does before it writes anything else.
func startRun(t *testing.T, w warehouse.FS, run string, topics ...string) {
	t.Helper()
	if err := writeJSON(w, path.Join(runDir(run), runInfoName), runInfo{Run: run, Topics: topics}); err != nil {
		t.Fatal(err)
	}
}

// commitOf commits m (from base) as a run does; once committed, its run
// directory goes, as after the run's moves.
func commitOf(t *testing.T, w warehouse.FS, m *Manifest, base int64, beforeCreate func() error) error {
	t.Helper()
	if err := publish(w, m, base, true, path.Join(runDir(m.Run), manifestName), beforeCreate); err != nil {
		return err
	}
	return w.RemoveAll(runDir(m.Run))
}

func next(t *testing.T, w warehouse.FS, topic string) int64 {
	t.Helper()
	state, _, err := loadState(w, []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	if state[topic] == nil || state[topic].Partitions[0] == nil {
		return 0
	}
	return state[topic].Partitions[0].Next
}

// A run paused after its checks, right before its commit point, while
// another run takes the topic over and commits: the paused run's commit is
// refused, naming the other run, and the other's state stands.
func TestCommitRefusedAfterTakeover(t *testing.T) {
	w := localWarehouse(t)
	if err := commitOf(t, w, stateManifest("r0", "t", 100), 0, nil); err != nil {
		t.Fatal(err)
	}
	_, base, _ := loadState(w, []string{"t"})
	startRun(t, w, "stale", "t")
	startRun(t, w, "taker", "t")
	err := commitOf(t, w, stateManifest("stale", "t", 200), base, func() error {
		// The pause: the taker planned from the same base and commits
		// first.
		return commitOf(t, w, stateManifest("taker", "t", 250), base, nil)
	})
	var conflict *CommitConflictError
	if !errors.As(err, &conflict) || conflict.Other != "taker" || conflict.Topic != "t" {
		t.Fatalf("the stale run's commit: %v, want a conflict naming run taker", err)
	}
	if !strings.Contains(err.Error(), "run taker committed topic t") {
		t.Errorf("message %q does not name the other run", err)
	}
	if got := next(t, w, "t"); got != 250 {
		t.Errorf("topic t continues at %d, want the taker's 250", got)
	}
}

// Runs of other topics do not refuse each other: a run whose number was
// taken by one of them commits at the next.
func TestCommitAfterOtherTopics(t *testing.T) {
	w := localWarehouse(t)
	startRun(t, w, "a", "x")
	startRun(t, w, "b", "y")
	ma := stateManifest("a", "x", 10)
	err := commitOf(t, w, ma, 0, func() error {
		return commitOf(t, w, stateManifest("b", "y", 20), 0, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if ma.Seq != 2 {
		t.Errorf("run a committed as %d, want 2 (b took 1)", ma.Seq)
	}
	if next(t, w, "x") != 10 || next(t, w, "y") != 20 {
		t.Errorf("state x=%d y=%d, want 10 and 20", next(t, w, "x"), next(t, w, "y"))
	}
}

// A run paused for long enough that the commit it aimed at was made and
// pruned by others cannot take the pruned number: pruning leaves a
// tombstone, and the run then finds the newer commit of its topic.
func TestPrunedNumberIsNeverFreeAgain(t *testing.T) {
	w := localWarehouse(t)
	startRun(t, w, "stale", "t")
	err := commitOf(t, w, stateManifest("stale", "t", 100), 0, func() error {
		for i, run := range []string{"o1", "o2", "o3"} {
			if err := commitOf(t, w, stateManifest(run, "t", int64(10*(i+1))), int64(i), nil); err != nil {
				return err
			}
		}
		mv := &mover{w: warehouse.NewBatch(w), log: slog.New(slog.DiscardHandler)}
		return mv.prune(map[string]bool{"t": true})
	})
	var conflict *CommitConflictError
	if !errors.As(err, &conflict) || conflict.Other != "o3" {
		t.Fatalf("the stale run's commit: %v, want a conflict naming run o3", err)
	}
	commits, last, err := listCommitLog(w)
	if err != nil || len(commits) != 1 || last != 3 {
		t.Fatalf("commits %v, last %d (%v): want o3's alone, 1 and 2 pruned to tombstones", commits, last, err)
	}
	for _, seq := range []int64{1, 2} {
		if fi, err := w.Stat(commitName(seq)); err != nil || fi.Size() != 0 {
			t.Errorf("pruned commit %d: %v, %v; want an empty file", seq, fi, err)
		}
	}
}

// Recovery fences a run before deleting its files: the run, paused and
// resumed, finds its files discarded and the fence, and commits nothing.
func TestFencedRunDoesNotCommit(t *testing.T) {
	w := localWarehouse(t)
	if err := commitOf(t, w, stateManifest("r0", "t", 100), 0, nil); err != nil {
		t.Fatal(err)
	}
	_, base, _ := loadState(w, []string{"t"})
	startRun(t, w, "paused", "t")
	mv := &mover{w: warehouse.NewBatch(w), log: slog.New(slog.DiscardHandler), id: "recoverer"}
	recovered, discarded, err := mv.recoverRuns(map[string]bool{"t": true})
	if err != nil || len(recovered) != 0 || len(discarded) != 1 {
		t.Fatalf("recovery: recovered %v, discarded %v, %v; want the paused run discarded", recovered, discarded, err)
	}
	if err := checkNotDiscarded(w, "paused"); err == nil {
		t.Error("a discarded run passes checkNotDiscarded")
	}
	// Even past that check (its directory recreated by its manifest), the
	// commit itself refuses.
	err = commitOf(t, w, stateManifest("paused", "t", 200), base, nil)
	var conflict *CommitConflictError
	if !errors.As(err, &conflict) || conflict.Other != fenceRun("recoverer", "paused") {
		t.Fatalf("the paused run's commit: %v, want it refused by the fence", err)
	}
	if !strings.Contains(err.Error(), "run recoverer discarded its files") {
		t.Errorf("message %q does not name the recovering run", err)
	}
	if got := next(t, w, "t"); got != 100 {
		t.Errorf("topic t continues at %d, want 100 (the fence keeps the state)", got)
	}
}

// Warehouses written before commits were numbered exclusively
// (<seq>-<run>.json) still load: their state is read, the next commit
// numbers after them, and pruning deletes them as before.
func TestLegacyCommitsStillLoad(t *testing.T) {
	w := localWarehouse(t)
	for i, run := range []string{"20250101T000000Z-aaaaaa", "20250101T010000Z-bbbbbb"} {
		m := stateManifest(run, "t", int64(100*(i+1)))
		m.Seq = int64(i + 1)
		data, _ := json.MarshalIndent(m, "", "  ")
		if err := warehouse.WriteFile(w, path.Join(commitsDir, "00000000000"+string(rune('1'+i))+"-"+run+".json"), data); err != nil {
			t.Fatal(err)
		}
	}
	if got := next(t, w, "t"); got != 200 {
		t.Fatalf("legacy state: next %d, want 200", got)
	}
	_, base, _ := loadState(w, []string{"t"})
	startRun(t, w, "new", "t")
	m := stateManifest("new", "t", 300)
	if err := commitOf(t, w, m, base, nil); err != nil {
		t.Fatal(err)
	}
	if m.Seq != 3 || next(t, w, "t") != 300 {
		t.Fatalf("new commit %d, next %d; want 3 and 300", m.Seq, next(t, w, "t"))
	}
	mv := &mover{w: warehouse.NewBatch(w), log: slog.New(slog.DiscardHandler)}
	if err := mv.prune(map[string]bool{"t": true}); err != nil {
		t.Fatal(err)
	}
	entries, err := w.ReadDir(commitsDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "000000000003.json" {
		t.Errorf("after pruning: %v, want the legacy commits deleted", names)
	}
	// A legacy commit's run still counts as committed for recovery.
	if _, err := readManifest(w, commitName(3)); err != nil {
		t.Error(err)
	}
	if _, err := w.Stat(path.Join(commitsDir, "000000000001-20250101T000000Z-aaaaaa.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("legacy commit 1 not pruned: %v", err)
	}
}
