package logstorm

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the summary's timer goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newLogger(buf *syncBuffer, burst int, window time.Duration, pass func() bool) *slog.Logger {
	return slog.New(New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}), burst, window, pass))
}

// waitFor polls until the log holds want, for up to 10 s.
func waitFor(t *testing.T, buf *syncBuffer, want string) string {
	return waitForN(t, buf, want, 1)
}

// waitForN polls until the log holds want n times, for up to 10 s.
func waitForN(t *testing.T, buf *syncBuffer, want string, n int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := buf.String()
		if strings.Count(out, want) >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log within 10 s:\n%s", want, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A storm of one message keeps its first lines and is summed up in one
// more: 1,000 partitions leaving the ISR at once give burst lines and a
// count, while another message, and debug lines, pass untouched.
func TestStormIsCutToItsBurstAndACount(t *testing.T) {
	var buf syncBuffer
	l := newLogger(&buf, 5, 200*time.Millisecond, nil).With("component", "replication")
	for p := range 1000 {
		l.Warn("follower left the isr", "topic", "clicks", "partition", p)
	}
	l.Warn("another message", "n", 1)
	for p := range 50 {
		l.Debug("debug line", "partition", p)
	}
	out := waitFor(t, &buf, "suppressed=")
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
	var buf syncBuffer
	var passing bool
	var mu sync.Mutex
	l := newLogger(&buf, 2, 100*time.Millisecond, func() bool { mu.Lock(); defer mu.Unlock(); return passing })
	for range 4 {
		l.Info("tick")
	}
	waitFor(t, &buf, "suppressed=2")
	for range 4 {
		l.Info("tick")
	}
	out := waitForN(t, &buf, "suppressed=2", 2)
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
