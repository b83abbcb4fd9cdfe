package logstorm

import (
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

func newLogger(buf *testenv.SyncBuffer, burst int, window time.Duration, pass func() bool) *slog.Logger {
	return slog.New(New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}), burst, window, pass))
}

// waitFor waits until the log holds want n times, for up to 10 s, and
// returns it.
func waitFor(t *testing.T, buf *testenv.SyncBuffer, want string, n int) string {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, want+" in the log", func() bool { return strings.Count(buf.String(), want) >= n })
	return buf.String()
}

// A storm of one message keeps its first lines and is summed up in one
// more: 1,000 partitions leaving the ISR at once give burst lines and a
// count, while another message, and debug lines, pass untouched.
func TestStormIsCutToItsBurstAndACount(t *testing.T) {
	var buf testenv.SyncBuffer
	l := newLogger(&buf, 5, 200*time.Millisecond, nil).With("component", "replication")
	for p := range 1000 {
		l.Warn("follower left the isr", "topic", "clicks", "partition", p)
	}
	l.Warn("another message", "n", 1)
	for p := range 50 {
		l.Debug("debug line", "partition", p)
	}
	out := waitFor(t, &buf, "suppressed=", 1)
	if n := strings.Count(out, `msg="follower left the isr"`); n != 6 {
		t.Fatalf("%d lines of the storm, want 5 and a summary:\n%s", n, out)
	}
	for p := range 5 {
		if !strings.Contains(out, " partition="+strconv.Itoa(p)+"\n") {
			t.Errorf("the storm's line for partition %d is missing", p)
		}
	}
	for _, want := range []string{
		`suppressed=995 window=200ms first.topic=clicks first.partition=5`,
		`component=replication`,
		`msg="another message" component=replication n=1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if n := strings.Count(out, `msg="debug line"`); n != 50 {
		t.Errorf("%d debug lines passed, want every one of the 50", n)
	}
}

// After a window closes the message gets a new burst, and while pass says
// so (the level is debug) nothing is held back.
func TestNewWindowAndPass(t *testing.T) {
	var buf testenv.SyncBuffer
	var passing bool
	var mu sync.Mutex
	l := newLogger(&buf, 2, 100*time.Millisecond, func() bool { mu.Lock(); defer mu.Unlock(); return passing })
	for range 4 {
		l.Info("tick")
	}
	waitFor(t, &buf, "suppressed=2", 1)
	for range 4 {
		l.Info("tick")
	}
	out := waitFor(t, &buf, "suppressed=2", 2)
	if n := strings.Count(out, `msg=tick`); n != 6 {
		t.Fatalf("%d tick lines, want 2 and a summary per window:\n%s", n, out)
	}
	mu.Lock()
	passing = true
	mu.Unlock()
	before := strings.Count(buf.String(), "msg=tick")
	for range 30 {
		l.Info("tick")
	}
	if got := strings.Count(buf.String(), "msg=tick") - before; got != 30 {
		t.Fatalf("%d of 30 lines passed while passing, want all", got)
	}
}
