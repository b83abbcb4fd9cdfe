package loginlimit

import (
	"fmt"
	"testing"
	"time"
)

// An address is refused after Max failures, told how long to wait, and
// admitted again once its window has passed; other addresses are not
// affected; the table never holds more than MaxAddrs addresses.
func TestLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &Limiter{Max: 3, Window: time.Minute, MaxAddrs: 5, Now: func() time.Time { return now }}
	for i := 0; i < 3; i++ {
		if ok, _, _ := l.Allow("10.0.0.1"); !ok {
			t.Fatalf("attempt %d refused before the limit", i+1)
		}
		l.Fail("10.0.0.1")
	}
	now = now.Add(20 * time.Second)
	ok, wait, n := l.Allow("10.0.0.1")
	if ok || wait != 40*time.Second || n != 3 {
		t.Fatalf("after 3 failures: ok=%v wait=%v failures=%d, want refused for 40s after 3", ok, wait, n)
	}
	if ok, _, _ := l.Allow("10.0.0.2"); !ok {
		t.Fatal("another address is refused")
	}
	now = now.Add(40 * time.Second)
	if ok, _, n := l.Allow("10.0.0.1"); !ok || n != 0 {
		t.Fatalf("after the window: ok=%v failures=%d, want admitted afresh", ok, n)
	}
	for i := 0; i < 100; i++ {
		l.Fail(fmt.Sprintf("10.1.0.%d", i))
		if n := l.Tracked(); n > 5 {
			t.Fatalf("%d addresses tracked, cap 5", n)
		}
	}
}
