package warehouse_test

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// longTTL is a lease no test outlives in real time, so its renewal (every
// ttl/4) never runs: only the fake clock decides whether it ran out.
const longTTL = time.Hour

// Who may take a lock, by what became of its last holder and how much
// time passed since.
func TestLockTakeover(t *testing.T) {
	cases := []struct {
		name    string
		holder  func(t *testing.T, w warehouse.FS, clock *testenv.Clock, name string) // leaves the lock in some state
		advance time.Duration
		taken   bool // whether a second process may take the lock then
	}{
		{"held", acquired, 0, false},
		{"held, lease nearly out", acquired, longTTL - time.Second, false},
		{"released", released, 0, true},
		{"holder died, within its lease", abandoned, longTTL - time.Second, false},
		{"holder died, lease ran out", abandoned, longTTL + time.Second, true},
		{"generation being written", unreadableGeneration, 0, false},
	}
	eachFS(t, func(t *testing.T, w warehouse.FS) {
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				clock := testenv.NewClock(time.Now())
				name := "job-" + string(rune('a'+i))
				c.holder(t, w, clock, name)
				clock.Advance(c.advance)
				l, err := warehouse.AcquireLock(w, name, "second", longTTL, warehouse.LockClock(clock.Now))
				var le *warehouse.LockedError
				switch {
				case c.taken && err != nil:
					t.Fatalf("second process: %v, want the lock", err)
				case c.taken:
					defer l.Release()
					if err := l.Check(); err != nil {
						t.Fatalf("lock just taken over: %v", err)
					}
				case !errors.As(err, &le):
					t.Fatalf("second process: %v, want a LockedError", err)
				}
			})
		}
	})
}

func acquire(t *testing.T, w warehouse.FS, clock *testenv.Clock, name string, ttl time.Duration) *warehouse.Lock {
	t.Helper()
	l, err := warehouse.AcquireLock(w, name, "first", ttl, warehouse.LockClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func acquired(t *testing.T, w warehouse.FS, clock *testenv.Clock, name string) {
	l := acquire(t, w, clock, name, longTTL)
	t.Cleanup(func() { l.Release() })
}

func released(t *testing.T, w warehouse.FS, clock *testenv.Clock, name string) {
	if err := acquire(t, w, clock, name, longTTL).Release(); err != nil {
		t.Fatal(err)
	}
}

// abandoned leaves the lock as a holder that died leaves it.
func abandoned(t *testing.T, w warehouse.FS, clock *testenv.Clock, name string) {
	acquire(t, w, clock, name, longTTL).Abandon()
}

// unreadableGeneration leaves a generation file as a taker that died (or
// is still) writing it leaves it: empty.
func unreadableGeneration(t *testing.T, w warehouse.FS, clock *testenv.Clock, name string) {
	if err := warehouse.WriteFile(w, path.Join(warehouse.LockDir, name, "000000000001.lock"), nil); err != nil {
		t.Fatal(err)
	}
}

// A generation file its taker never finished writing (it died) stops
// blocking the lock once it is older than a lease. Its age is measured in
// real time, from the modification time the warehouse gave it, so the test
// backdates the file instead of advancing the clock.
func TestLockUnwrittenGenerationGoesStale(t *testing.T) {
	dir := t.TempDir()
	w, err := warehouse.Open("file://" + dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	clock := testenv.NewClock(time.Now())
	unreadableGeneration(t, w, clock, "job-x")
	long := time.Now().Add(-longTTL - time.Minute)
	if err := os.Chtimes(filepath.Join(dir, warehouse.LockDir, "job-x", "000000000001.lock"), long, long); err != nil {
		t.Fatal(err)
	}
	l, err := warehouse.AcquireLock(w, "job-x", "second", longTTL, warehouse.LockClock(clock.Now))
	if err != nil {
		t.Fatalf("over an abandoned, unwritten generation: %v, want the lock", err)
	}
	defer l.Release()
	if err := l.Check(); err != nil {
		t.Fatalf("lock just taken over: %v", err)
	}
}

// Several takers race for an expired lock: exactly one wins, and the dead
// holder, should it come back, finds it lost.
func TestLockRaceForExpiredLease(t *testing.T) {
	eachFS(t, func(t *testing.T, w warehouse.FS) {
		clock := testenv.NewClock(time.Now())
		dead := acquire(t, w, clock, "job-x", longTTL)
		dead.Abandon()
		clock.Advance(longTTL + time.Second)
		var mu sync.Mutex
		var winners []*warehouse.Lock
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				l, err := warehouse.AcquireLock(w, "job-x", "racer", longTTL, warehouse.LockClock(clock.Now))
				if err == nil {
					mu.Lock()
					winners = append(winners, l)
					mu.Unlock()
				} else if !errors.As(err, new(*warehouse.LockedError)) {
					t.Errorf("racer: %v", err)
				}
			})
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("%d racers took the expired lock, want 1", len(winners))
		}
		defer winners[0].Release()
		if err := dead.Check(); !errors.Is(err, warehouse.ErrLockLost) {
			t.Fatalf("the dead holder's Check: %v, want ErrLockLost", err)
		}
	})
}

// Check refuses a holder whose lease is nearly out: it may not act on a
// lock it could lose before the action lands.
func TestLockCheckLateRenewal(t *testing.T) {
	eachFS(t, func(t *testing.T, w warehouse.FS) {
		clock := testenv.NewClock(time.Now())
		l := acquire(t, w, clock, "job-x", longTTL)
		defer l.Release()
		clock.Advance(longTTL * 8 / 10)
		if err := l.Check(); err != nil {
			t.Fatalf("with a fifth of the lease left: %v", err)
		}
		clock.Advance(longTTL * 15 / 100)
		if err := l.Check(); !errors.Is(err, warehouse.ErrLockLost) {
			t.Fatalf("with a twentieth of the lease left, not renewed: %v, want ErrLockLost", err)
		}
	})
}

// Renewal, paced by real time, extends the lease from the lock's clock: a
// holder that renews keeps the lock past its first lease.
func TestLockRenewal(t *testing.T) {
	eachFS(t, func(t *testing.T, w warehouse.FS) {
		const ttl = 2 * time.Second // renewed every 500 ms of real time
		clock := testenv.NewClock(time.Now())
		l := acquire(t, w, clock, "job-x", ttl)
		defer l.Release()
		// With a twentieth of the lease left, only a renewal makes Check
		// pass again.
		clock.Advance(ttl * 95 / 100)
		testenv.Eventually(t, 30*time.Second, "a renewal", func() bool { return l.Check() == nil })
		clock.Advance(ttl / 2) // past the first lease
		if err := l.Check(); err != nil {
			t.Fatalf("a renewed lock fails Check: %v", err)
		}
		var le *warehouse.LockedError
		if _, err := warehouse.AcquireLock(w, "job-x", "second", ttl, warehouse.LockClock(clock.Now)); !errors.As(err, &le) {
			t.Fatalf("acquire while renewed: %v, want a LockedError", err)
		}
	})
}

// A holder whose lease ran out before it could renew (a long pause) gives
// the lock up on its next renewal instead of extending a lease another
// process may already have taken over.
func TestLockLeaseRanOutBeforeRenewal(t *testing.T) {
	eachFS(t, func(t *testing.T, w warehouse.FS) {
		const ttl = 2 * time.Second
		clock := testenv.NewClock(time.Now())
		l := acquire(t, w, clock, "job-x", ttl)
		defer l.Release()
		clock.Advance(ttl)
		select {
		case <-l.Lost():
		case <-time.After(30 * time.Second):
			t.Fatal("the lock is not reported lost after its lease ran out")
		}
		if err := l.Err(); !errors.Is(err, warehouse.ErrLockLost) {
			t.Fatalf("Err: %v, want ErrLockLost", err)
		}
	})
}

// ReadLock names the holder only while its lease runs.
func TestReadLock(t *testing.T) {
	eachFS(t, func(t *testing.T, w warehouse.FS) {
		clock := testenv.NewClock(time.Now())
		read := func() *warehouse.LockInfo {
			t.Helper()
			info, err := warehouse.ReadLock(w, "job-x", longTTL, warehouse.LockClock(clock.Now))
			if err != nil {
				t.Fatal(err)
			}
			return info
		}
		if info := read(); info != nil {
			t.Fatalf("never taken: %+v", info)
		}
		acquire(t, w, clock, "job-x", longTTL).Abandon()
		if info := read(); info == nil || info.Holder != "first" {
			t.Fatalf("held: %+v, want the holder", info)
		}
		clock.Advance(longTTL)
		if info := read(); info != nil {
			t.Fatalf("lease ran out: %+v, want nil", info)
		}
	})
}
