package loader_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// crashAt returns a fault hook that kills the run the first time it
// reaches point.
func crashAt(point loader.FaultPoint) func(loader.FaultPoint) error {
	var once sync.Once
	return func(p loader.FaultPoint) error {
		var err error
		if p == point {
			once.Do(func() { err = errors.New("killed at " + string(point)) })
		}
		return err
	}
}

// runAfterExpiry runs a load once the locks a dead run left behind have
// expired.
func runAfterExpiry(t *testing.T, cfg loader.Config) *loader.Summary {
	t.Helper()
	deadline := time.Now().Add(3*cfg.LockTTL + 10*time.Second)
	for {
		sum, err := loader.Run(context.Background(), cfg)
		var locked *warehouse.LockedError
		if errors.As(err, &locked) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("run after the crash: %v", err)
		}
		return sum
	}
}

// A run killed at each of its five named points, then followed by another
// run, leaves every event in the warehouse exactly once: a run committed
// before the kill is finished by the next, an uncommitted one is discarded
// and loaded again.
func TestCrashAtEachPoint(t *testing.T) {
	const n = 8000
	env := loadertest.Start(t)
	env.CreateTopic(t, "crashes", 4)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 4, from, 3*time.Hour)
	env.Produce(t, "crashes", loadertest.Schema(t, "pageview"), events)

	for _, kind := range []string{"local", "hdfs", "s3"} {
		for _, point := range loader.FaultPoints {
			t.Run(kind+"/"+string(point), func(t *testing.T) {
				url := warehouses(t)[kind](t)
				cfg := config(env, url, "crashes")
				cfg.FileMaxRecords = 400 // many files: a move can be cut short
				// A first run loads half, so the killed run continues from
				// committed offsets.
				first := cfg
				first.MaxRecords = n / 2
				run(t, first)

				crashing := cfg
				crashing.Fault = crashAt(point)
				sum, err := loader.Run(context.Background(), crashing)
				if err == nil {
					t.Fatalf("the fault at %s did not stop the run", point)
				}
				committed := point == loader.FaultAfterCommit || point == loader.FaultMidMove
				if sum.Committed != committed {
					t.Fatalf("killed at %s: committed=%v, want %v (%v)", point, sum.Committed, committed, err)
				}

				next := runAfterExpiry(t, cfg)
				if committed {
					if !slices.Contains(next.Recovered, sum.Run) || next.Records != 0 {
						t.Errorf("next run: recovered %v, loaded %d; want the killed run %s finished and nothing new", next.Recovered, next.Records, sum.Run)
					}
				} else {
					if !slices.Contains(next.Discarded, sum.Run) || next.Records != n-n/2 {
						t.Errorf("next run: discarded %v, loaded %d; want the killed run %s discarded and %d loaded", next.Discarded, next.Records, sum.Run, n-n/2)
					}
				}
				c := loadertest.Read(t, openWarehouse(t, url))
				loadertest.CheckExactlyOnce(t, c, "crashes", events)
				for _, s := range c.State {
					if !isCommit(s) {
						t.Errorf("left behind: %s", s)
					}
				}
			})
		}
	}
}

func isCommit(p string) bool {
	return len(p) > len("_tributary/commits/") && p[:len("_tributary/commits/")] == "_tributary/commits/"
}

// A run over topics x and y killed after its commit is finished by a later
// run over x alone: y's records do not wait for a run over both.
func TestRecoveryAcrossTopicSets(t *testing.T) {
	env := loadertest.Start(t)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	evs := map[string][]loadertest.Event{}
	for _, topic := range []string{"x", "y"} {
		env.CreateTopic(t, topic, 2)
		evs[topic] = loadertest.PageViews(0, 500, 2, from, time.Hour)
		env.Produce(t, topic, loadertest.Schema(t, "pageview"), evs[topic])
	}
	url := "file://" + t.TempDir()
	both := config(env, url, "x", "y")
	both.Fault = crashAt(loader.FaultAfterCommit)
	killed, err := loader.Run(context.Background(), both)
	if err == nil || !killed.Committed {
		t.Fatalf("killed after commit: committed=%v, %v", killed.Committed, err)
	}
	next := runAfterExpiry(t, config(env, url, "x"))
	if !slices.Contains(next.Recovered, killed.Run) {
		t.Fatalf("the run over x recovered %v, want %s", next.Recovered, killed.Run)
	}
	c := loadertest.Read(t, openWarehouse(t, url))
	loadertest.CheckExactlyOnce(t, c, "x", evs["x"])
	loadertest.CheckExactlyOnce(t, c, "y", evs["y"])
}

// cutRemoval is a warehouse whose first removal inside one run's
// directory is cut short, as by a kill: it removes only that run's
// run.json when asked to remove the whole directory (an os.RemoveAll
// may take it first), and fails.
type cutRemoval struct {
	warehouse.FS
	dir string
	cut bool
}

func (c *cutRemoval) RemoveAll(name string) error {
	if c.cut || (name != c.dir && !strings.HasPrefix(name, c.dir+"/")) {
		return c.FS.RemoveAll(name)
	}
	c.cut = true
	if name == c.dir {
		c.FS.Remove(c.dir + "/run.json")
	}
	return errors.New("killed while deleting")
}

// A run killed while it deleted a dead run's files leaves that directory
// in a state the next run still recognises and deletes: before, the
// deletion could take run.json first, and the files left without it were
// left alone for an hour as those of a run still starting.
func TestDiscardCutShortIsFinished(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "cutshort", 2)
	events := loadertest.PageViews(0, 400, 2, time.Now().UTC().Truncate(time.Hour).Add(-3*time.Hour), time.Hour)
	env.Produce(t, "cutshort", loadertest.Schema(t, "pageview"), events)
	url := "file://" + t.TempDir()
	cfg := config(env, url, "cutshort")
	cfg.LockTTL, cfg.FileMaxRecords = time.Second, 50
	dead := cfg
	dead.Fault = crashAt(loader.FaultMidWrite)
	sum, _ := loader.Run(context.Background(), dead)
	w := openWarehouse(t, url)
	cutting := cfg
	cutting.FS = &cutRemoval{FS: w, dir: "_tributary/runs/" + sum.Run}
	// Once the dead run's lease has run out, a run takes its topic and
	// starts deleting its files.
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := loader.Run(context.Background(), cutting)
		var locked *warehouse.LockedError
		if errors.As(err, &locked) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err == nil || !cutting.FS.(*cutRemoval).cut {
			t.Fatalf("the run whose deletion was cut short: %v", err)
		}
		break
	}
	next := runAfterExpiry(t, cfg)
	if !slices.Contains(next.Discarded, sum.Run) {
		t.Errorf("the next run discarded %v, want the dead run %s", next.Discarded, sum.Run)
	}
	c := loadertest.Read(t, w)
	loadertest.CheckExactlyOnce(t, c, "cutshort", events)
	for _, s := range c.State {
		if !isCommit(s) {
			t.Errorf("left behind: %s", s)
		}
	}
}
