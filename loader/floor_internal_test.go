package loader

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// withFloorEvery lowers the tombstone count that raises a floor.
func withFloorEvery(t *testing.T, n int) {
	old := floorEvery
	floorEvery = n
	t.Cleanup(func() { floorEvery = old })
}

func pruneAll(w warehouse.FS, topics ...string) error {
	held := map[string]bool{}
	for _, t := range topics {
		held[t] = true
	}
	mv := &mover{w: warehouse.NewBatch(w), log: slog.New(slog.DiscardHandler)}
	return mv.prune(held)
}

func commitsListing(t *testing.T, w warehouse.FS) []string {
	t.Helper()
	infos, err := w.ReadDir(commitsDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range infos {
		names = append(names, fi.Name())
	}
	slices.Sort(names)
	return names
}

// Once tombstones pile up, pruning replaces them with a floor: the commits
// directory holds the live commit and the floor alone, the topic's state
// is unchanged, and numbers go on above the floor.
func TestFloorReplacesTombstones(t *testing.T) {
	withFloorEvery(t, 3)
	w := localWarehouse(t)
	for i, run := range []string{"r1", "r2", "r3", "r4", "r5"} {
		if err := commitOf(t, w, stateManifest(run, "t", int64(10*(i+1))), int64(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := pruneAll(w, "t"); err != nil {
		t.Fatal(err)
	}
	want := []string{"000000000005.json", "floor-000000000005.json"}
	if got := commitsListing(t, w); !slices.Equal(got, want) {
		t.Fatalf("commits after pruning: %v, want %v", got, want)
	}
	if got := next(t, w, "t"); got != 50 {
		t.Fatalf("topic t continues at %d, want 50", got)
	}
	startRun(t, w, "r6", "t")
	m := stateManifest("r6", "t", 60)
	if err := commitOf(t, w, m, 5, nil); err != nil || m.Seq != 6 {
		t.Fatalf("the next commit: number %d, %v; want 6", m.Seq, err)
	}
	// A second floor replaces the first.
	for i, run := range []string{"r7", "r8", "r9"} {
		if err := commitOf(t, w, stateManifest(run, "t", int64(70+10*i)), int64(6+i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := pruneAll(w, "t"); err != nil {
		t.Fatal(err)
	}
	want = []string{"000000000009.json", "floor-000000000009.json"}
	if got := commitsListing(t, w); !slices.Equal(got, want) {
		t.Fatalf("commits after the second floor: %v, want %v", got, want)
	}
}

// A run paused between listing the commits and creating its number, while
// others commit, prune and raise a floor over that number's deleted
// tombstone: its create succeeds, but the number is void; the run takes
// its file back, numbers again and finds the newer commit of its topic.
func TestPausedRunTakesBackANumberUnderTheFloor(t *testing.T) {
	withFloorEvery(t, 2)
	w := localWarehouse(t)
	startRun(t, w, "stale", "t")
	err := commitOf(t, w, stateManifest("stale", "t", 100), 0, func() error {
		for i, run := range []string{"o1", "o2", "o3"} {
			if err := commitOf(t, w, stateManifest(run, "t", int64(10*(i+1))), int64(i), nil); err != nil {
				return err
			}
		}
		if err := pruneAll(w, "t"); err != nil {
			return err
		}
		if got := commitsListing(t, w); slices.Contains(got, "000000000001.json") {
			t.Fatalf("the floor left number 1's tombstone: %v", got)
		}
		return nil
	})
	var conflict *CommitConflictError
	if !errors.As(err, &conflict) || conflict.Other != "o3" {
		t.Fatalf("the stale run's commit: %v, want a conflict naming run o3", err)
	}
	want := []string{"000000000003.json", "floor-000000000003.json"}
	if got := commitsListing(t, w); !slices.Equal(got, want) {
		t.Fatalf("commits: %v, want %v (the void number taken back)", got, want)
	}
	if got := next(t, w, "t"); got != 30 {
		t.Errorf("topic t continues at %d, want o3's 30", got)
	}
}

// A void commit left behind (its run killed before it took the number
// back) is invisible to readers and deleted by the next floor.
func TestVoidCommitIsIgnored(t *testing.T) {
	withFloorEvery(t, 2)
	w := localWarehouse(t)
	for i, run := range []string{"o1", "o2", "o3"} {
		if err := commitOf(t, w, stateManifest(run, "t", int64(10*(i+1))), int64(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := pruneAll(w, "t"); err != nil {
		t.Fatal(err)
	}
	stale := stateManifest("stale", "t", 999)
	stale.Seq = 1
	if err := writeJSON(w, commitName(1), stale); err != nil {
		t.Fatal(err)
	}
	commits, last, err := listCommitLog(w)
	if err != nil || len(commits) != 1 || commits[0].seq != 3 || last != 3 {
		t.Fatalf("listing: %v, last %d, %v; want commit 3 alone", commits, last, err)
	}
	if got := next(t, w, "t"); got != 30 {
		t.Fatalf("topic t continues at %d, want 30: the void commit was read", got)
	}
	for i, run := range []string{"o4", "o5"} {
		if err := commitOf(t, w, stateManifest(run, "t", int64(40+10*i)), int64(3+i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := pruneAll(w, "t"); err != nil {
		t.Fatal(err)
	}
	want := []string{"000000000005.json", "floor-000000000005.json"}
	if got := commitsListing(t, w); !slices.Equal(got, want) {
		t.Fatalf("commits: %v, want %v (the void commit deleted)", got, want)
	}
}

// A floor file damaged on disk (cut short, or naming another number) is
// reported by name, and no commit is read past it: the warehouse's state
// cannot be trusted without it.
func TestDamagedFloorIsReported(t *testing.T) {
	w := localWarehouse(t)
	if err := commitOf(t, w, stateManifest("r1", "t", 10), 0, nil); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"cut short":    `{"floor": 1, "li`,
		"other number": `{"floor": 7, "live": [1]}`,
	} {
		if err := warehouse.WriteFile(w, floorName(1), []byte(data)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := listCommitLog(w); err == nil || !strings.Contains(err.Error(), "floor-000000000001.json is damaged") {
			t.Errorf("%s: listing the commits: %v, want the damaged floor named", name, err)
		}
	}
}
