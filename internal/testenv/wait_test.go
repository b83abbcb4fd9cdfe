package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as a real test's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runRecorded calls f with a recorder in a goroutine of its own (Fatalf ends it)
// and returns what Fatalf said, "" if nothing.
func runRecorded(f func(testing.TB)) string {
	r := &fatalRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

// A wait that times out says what it last saw, so that a failure can be
// understood without running it again.
func TestEventuallyfReportsLastState(t *testing.T) {
	n := 0
	msg := runRecorded(func(tb testing.TB) {
		Eventuallyf(tb, 100*time.Millisecond, func() (bool, string) {
			n++
			return false, fmt.Sprintf("attempt %d", n)
		})
	})
	if want := fmt.Sprintf("attempt %d", n); !strings.HasSuffix(msg, want) {
		t.Fatalf("failure %q, want it to end with the last state %q", msg, want)
	}
	if msg := runRecorded(func(tb testing.TB) {
		Eventually(tb, time.Second, "never", func() bool { n++; return n > 5 })
	}); msg != "" {
		t.Fatalf("a condition that came true failed the test: %q", msg)
	}
}
