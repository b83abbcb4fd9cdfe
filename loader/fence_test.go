package loader_test

import (
	"context"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// A run stalled at its commit point, after its last lock check, for
// longer than its topic lease (every warehouse call of its process hangs,
// lease renewals included, as in a long GC pause or on a stalled disk):
// another run takes the topic over, discards the stalled run's files and
// commits the same records. Resumed, the stalled run is refused by the
// commit itself, with an error naming the other run; nothing of it is
// left, and every record is in the warehouse exactly once.
func TestPausedLoaderIsFenced(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	env.CreateTopic(t, "paused", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 3*time.Hour)
	env.Produce(t, "paused", loadertest.Schema(t, "pageview"), events)

	for _, kind := range []string{"local", "s3", "hdfs"} {
		t.Run(kind, func(t *testing.T) {
			url := warehouses(t)[kind](t)
			stalled := &stallFS{FS: openWarehouse(t, url)}
			cfg := config(env, url, "paused")
			cfg.FileMaxRecords = 500
			cfg.LockTTL = 2 * time.Second
			first := cfg
			first.FS = stalled
			atCommit := make(chan struct{})
			resume := make(chan struct{})
			first.Fault = func(p loader.FaultPoint) error {
				if p == loader.FaultCommitPoint {
					stalled.stall(true)
					close(atCommit)
					<-resume
					stalled.stall(false)
				}
				return nil
			}
			type result struct {
				sum *loader.Summary
				err error
			}
			done := make(chan result, 1)
			go func() { sum, err := loader.Run(context.Background(), first); done <- result{sum, err} }()
			select {
			case <-atCommit:
			case r := <-done:
				t.Fatalf("the first run ended before its commit point: %v", r.err)
			case <-time.After(60 * time.Second):
				t.Fatal("the first run did not reach its commit point")
			}

			// Its lease runs out; this run takes the topic over.
			taker := runAfterExpiry(t, config(env, url, "paused"))
			if taker.Records != n || len(taker.Discarded) != 1 {
				t.Fatalf("the run taking over loaded %d records and discarded %v; want %d and the stalled run", taker.Records, taker.Discarded, n)
			}

			close(resume)
			var r result
			select {
			case r = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the resumed run did not finish")
			}
			if r.err == nil || r.sum.Committed {
				t.Fatalf("the resumed run: committed=%v, error %v; want its commit refused", r.sum.Committed, r.err)
			}
			if !strings.Contains(r.err.Error(), "not committing run "+r.sum.Run) || !strings.Contains(r.err.Error(), "run "+taker.Run) {
				t.Errorf("the resumed run's error does not name the run that took over (%s): %v", taker.Run, r.err)
			}
			t.Logf("the resumed run: %v", r.err)

			w := openWarehouse(t, url)
			c := loadertest.Read(t, w)
			loadertest.CheckExactlyOnce(t, c, "paused", events)
			for _, s := range c.State {
				if !isCommit(s) {
					t.Errorf("left behind: %s", s)
					continue
				}
				if data, err := warehouse.ReadFile(w, s); err != nil {
					t.Error(err)
				} else if strings.Contains(string(data), `"run": "`+r.sum.Run+`"`) {
					t.Errorf("the stalled run committed: %s", s)
				}
			}
			if again := run(t, config(env, url, "paused")); again.Records != 0 || len(again.Discarded)+len(again.Recovered) != 0 {
				t.Errorf("the next run loaded %d records, discarded %v, recovered %v; want nothing to do", again.Records, again.Discarded, again.Recovered)
			}
		})
	}
}

// stallFS is a warehouse whose every call waits while it is stalled: the
// warehouse side of a process that is paused (its lease renewals too).
type stallFS struct {
	warehouse.FS
	mu      sync.Mutex
	stalled bool
	cond    *sync.Cond
}

func (s *stallFS) stall(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cond == nil {
		s.cond = sync.NewCond(&s.mu)
	}
	s.stalled = on
	s.cond.Broadcast()
}

func (s *stallFS) wait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.stalled {
		s.cond.Wait()
	}
}

func (s *stallFS) Unwrap() warehouse.FS { return s.FS }

func (s *stallFS) Create(name string) (io.WriteCloser, error) { s.wait(); return s.FS.Create(name) }
func (s *stallFS) CreateExclusive(name string, data []byte) error {
	s.wait()
	return s.FS.CreateExclusive(name, data)
}
func (s *stallFS) Open(name string) (io.ReadCloser, error) { s.wait(); return s.FS.Open(name) }
func (s *stallFS) Rename(o, n string) error                { s.wait(); return s.FS.Rename(o, n) }
func (s *stallFS) RenameNoReplace(o, n string) error       { s.wait(); return s.FS.RenameNoReplace(o, n) }
func (s *stallFS) Remove(name string) error                { s.wait(); return s.FS.Remove(name) }
func (s *stallFS) RemoveAll(name string) error             { s.wait(); return s.FS.RemoveAll(name) }
func (s *stallFS) ReadDir(name string) ([]fs.FileInfo, error) {
	s.wait()
	return s.FS.ReadDir(name)
}
func (s *stallFS) Stat(name string) (fs.FileInfo, error) { s.wait(); return s.FS.Stat(name) }
func (s *stallFS) MkdirAll(name string) error            { s.wait(); return s.FS.MkdirAll(name) }
