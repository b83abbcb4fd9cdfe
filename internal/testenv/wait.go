package testenv

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// Eventually polls cond until it holds, failing the test with what after
// within. Services settle asynchronously (a ZooKeeper watch, a rebalance, a
// flush), so tests wait for a state rather than sleep a fixed time.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventuallyf(t, within, func() (bool, string) { return cond(), what })
}

// Eventuallyf is Eventually for a wait whose failure is understood only
// with the state it last saw (what two registry nodes show, a process's
// output so far): cond says whether the state holds and, if not, describes
// it, and the test fails with the last description.
func Eventuallyf(t testing.TB, within time.Duration, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %s", within, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Consistently polls cond for the whole of within, failing the test with
// what as soon as it does not hold: the counterpart of Eventually for a
// state that must last (a settled group stays settled). It proves nothing
// beyond within, so within is the longest a regression may take to show.
func Consistently(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if !cond() {
			t.Fatalf("stopped being true within %v: %s", within, what)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Logger sends log lines at level and above to the test log, so they show
// with a failing test and nowhere else. It goes quiet when the test ends:
// ZooKeeper and kgo clients may still log from their goroutines while they
// shut down, and testing panics on a Log after the end of a test.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}
