package budget

import (
	"testing"
	"time"
)

// TestAcquireWaitsForRelease: a holder that does not fit waits until
// enough is released, then takes what it asked for; the peak is the most
// held at once.
func TestAcquireWaitsForRelease(t *testing.T) {
	b := New(100)
	if !b.Acquire(60, nil, nil) {
		t.Fatal("first acquire refused")
	}
	got := make(chan bool)
	go func() { got <- b.Acquire(50, nil, nil) }()
	select {
	case <-got:
		t.Fatal("50 bytes acquired while 60 of 100 were held")
	case <-time.After(20 * time.Millisecond):
	}
	b.Release(60)
	if !<-got {
		t.Fatal("acquire refused after the release")
	}
	if b.InUse() != 50 || b.Peak() != 60 {
		t.Fatalf("in use %d, peak %d; want 50 and 60", b.InUse(), b.Peak())
	}
}

// TestLargerThanTheBudgetIsClamped: a request larger than the whole budget
// takes all of it instead of waiting forever.
func TestLargerThanTheBudgetIsClamped(t *testing.T) {
	b := New(100)
	if n := b.Clamp(1 << 30); n != 100 {
		t.Fatalf("Clamp = %d, want 100", n)
	}
	if !b.Acquire(1<<30, nil, nil) || b.InUse() != 100 {
		t.Fatalf("in use %d after acquiring more than the budget, want 100", b.InUse())
	}
}

// TestCanceledWaitTakesNothing: either cancel channel ends a wait, and the
// wait takes nothing.
func TestCanceledWaitTakesNothing(t *testing.T) {
	for _, second := range []bool{false, true} {
		b := New(10)
		b.Acquire(10, nil, nil)
		cancel := make(chan struct{})
		done := make(chan bool)
		go func() {
			if second {
				done <- b.Acquire(5, nil, cancel)
			} else {
				done <- b.Acquire(5, cancel, nil)
			}
		}()
		close(cancel)
		if <-done {
			t.Fatal("a canceled wait acquired")
		}
		if b.InUse() != 10 {
			t.Fatalf("in use %d after a canceled wait, want 10", b.InUse())
		}
	}
}
