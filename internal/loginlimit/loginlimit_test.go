package loginlimit

import (
	"fmt"
	"testing"
	"time"
)

// A user is refused from an address after Max failures there, told how
// long to wait, and admitted again once its window has passed; other
// addresses are not affected; the tables never hold more than MaxEntries.
func TestLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &Limiter{Max: 3, Window: time.Minute, MaxEntries: 5, Now: func() time.Time { return now }}
	for i := 0; i < 3; i++ {
		if ok, _, _ := l.Allow("10.0.0.1", "eve"); !ok {
			t.Fatalf("attempt %d refused before the limit", i+1)
		}
		l.Fail("10.0.0.1", "eve")
	}
	now = now.Add(20 * time.Second)
	ok, wait, n := l.Allow("10.0.0.1", "eve")
	if ok || wait != 40*time.Second || n != 3 {
		t.Fatalf("after 3 failures: ok=%v wait=%v failures=%d, want refused for 40s after 3", ok, wait, n)
	}
	if ok, _, _ := l.Allow("10.0.0.2", "eve"); !ok {
		t.Fatal("another address is refused")
	}
	now = now.Add(40 * time.Second)
	if ok, _, n := l.Allow("10.0.0.1", "eve"); !ok || n != 0 {
		t.Fatalf("after the window: ok=%v failures=%d, want admitted afresh", ok, n)
	}
	for i := 0; i < 100; i++ {
		l.Fail(fmt.Sprintf("10.1.0.%d", i), "eve")
		l.Succeed(fmt.Sprintf("10.2.0.%d", i), "eve")
		if n := l.Tracked(); n > 5 || len(l.users) > 5 || len(l.trusted) > 5 {
			t.Fatalf("%d addresses, %d pairs, %d trusted tracked; cap 5", n, len(l.users), len(l.trusted))
		}
	}
}

// A burst of failed logins from a shared address (one NAT, one proxy)
// locks out the users it guesses, never another user at that address.
// Before, 10 failures of anyone refused everyone there for the rest of
// the minute, the administrator with the right password included.
func TestLimiterBurstDoesNotLockOutOtherUsers(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &Limiter{Now: func() time.Time { return now }}
	const nat = "192.0.2.7"
	for range 50 {
		if ok, _, _ := l.Allow(nat, "bob"); ok {
			l.Fail(nat, "bob")
		}
	}
	if ok, _, n := l.Allow(nat, "bob"); ok || n != DefaultMax {
		t.Fatalf("bob after a burst of wrong passwords: ok=%v failures=%d, want refused after %d", ok, n, DefaultMax)
	}
	if ok, wait, n := l.Allow(nat, "admin"); !ok {
		t.Fatalf("admin at the same address refused (wait %v, %d failures) after bob's burst", wait, n)
	}

	// Spraying many names reaches the address's limit: then only users
	// who logged in from it lately get in.
	l.Succeed(nat, "admin")
	for i := 0; i < 2*DefaultMaxPerAddr; i++ {
		if ok, _, _ := l.Allow(nat, fmt.Sprintf("user%d", i)); ok {
			l.Fail(nat, fmt.Sprintf("user%d", i))
		}
	}
	if ok, _, n := l.Allow(nat, "carol"); ok || n != DefaultMaxPerAddr {
		t.Fatalf("a new name after a spray: ok=%v failures=%d, want refused after %d", ok, n, DefaultMaxPerAddr)
	}
	if ok, wait, _ := l.Allow(nat, "admin"); !ok {
		t.Fatalf("admin, who logged in from the address, refused after a spray (wait %v)", wait)
	}
	if ok, _, _ := l.Allow("198.51.100.1", "carol"); !ok {
		t.Fatal("another address is refused")
	}
}

// A success clears its own user's failures at that address, and only
// those: the address's count stays, so one valid account cannot reset the
// count for guessing others.
func TestLimiterSuccessClearsItsOwnCount(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &Limiter{Max: 3, MaxPerAddr: 5, Now: func() time.Time { return now }}
	l.Fail("a", "alice")
	l.Fail("a", "alice")
	l.Succeed("a", "alice")
	if _, _, n := l.Allow("a", "alice"); n != 0 {
		t.Fatalf("alice has %d failures after logging in, want 0", n)
	}
	for range 3 {
		l.Fail("a", "mallory")
	}
	l.Succeed("a", "mallory2")
	if ok, _, _ := l.Allow("a", "mallory"); ok {
		t.Fatal("another user's success cleared mallory's failures")
	}
	if ok, _, n := l.Allow("a", "dave"); ok || n != 5 {
		t.Fatalf("dave after 5 failures at the address: ok=%v failures=%d, want refused: successes do not clear the address's count", ok, n)
	}
}
