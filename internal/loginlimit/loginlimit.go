// Package loginlimit bounds password guessing: it counts failed logins per
// client address and user, and per address across users, and once either
// count reaches its limit within Window, refuses further attempts (of that
// user from that address, or of anyone from that address) until that
// window ends, without checking them. The broker's SASL logins and the
// schema registry's basic auth share it.
//
// Counting per address alone let a burst of failures from one address —
// many clients behind one NAT or proxy, one of them misconfigured or
// hostile — lock every user at that address out, the administrator
// included. So:
//
//   - A user is refused from an address after Max failures of that user
//     there within Window. Other users at the address are not affected.
//   - An address is refused for everyone after MaxPerAddr failures there
//     across users within Window (spraying many user names), except for
//     users who logged in successfully from it within Trust: a sprayer
//     cannot lock out the people who work there.
//   - A successful login clears its own user's failures at that address,
//     not the address's: otherwise one valid account would reset the count
//     for guessing others.
//
// What a caller may rely on:
//
//   - Memory is bounded: at most MaxEntries addresses, MaxEntries
//     (address, user) pairs and MaxEntries trusted pairs are tracked. When
//     a table is full, entries whose window has ended are forgotten first,
//     then arbitrary ones; so an attacker spraying from more addresses than
//     that can evade the limit, but never grow the tables.
//   - Refusals report how long until the attempt may be made again.
package loginlimit

import (
	"sync"
	"time"
)

// Defaults of a zero Limiter.
const (
	DefaultMax        = 10
	DefaultMaxPerAddr = 100
	DefaultWindow     = time.Minute
	DefaultTrust      = 24 * time.Hour
	DefaultMaxEntries = 10000
)

// Limiter counts failed logins. Its zero value is usable, with the
// defaults; it is safe for concurrent use.
type Limiter struct {
	Max        int           // failures of one user from one address per window; default DefaultMax
	MaxPerAddr int           // failures from one address across users per window; default DefaultMaxPerAddr
	Window     time.Duration // default DefaultWindow
	// Trust is how long a successful login exempts its user at that
	// address from the address's limit; default DefaultTrust.
	Trust      time.Duration
	MaxEntries int // entries per table at most; default DefaultMaxEntries
	// Now is the clock; default time.Now. Tests set it.
	Now func() time.Time

	mu      sync.Mutex
	users   map[pair]*window
	addrs   map[string]*window
	trusted map[pair]time.Time // when the user last logged in from the address
}

type pair struct{ addr, user string }

// window is the failures counted since start.
type window struct {
	start    time.Time
	failures int
}

type settings struct {
	max, perAddr, entries int
	win, trust            time.Duration
	now                   time.Time
}

func (l *Limiter) settings() settings {
	s := settings{max: l.Max, perAddr: l.MaxPerAddr, entries: l.MaxEntries, win: l.Window, trust: l.Trust}
	if s.max <= 0 {
		s.max = DefaultMax
	}
	if s.perAddr <= 0 {
		s.perAddr = DefaultMaxPerAddr
	}
	if s.entries <= 0 {
		s.entries = DefaultMaxEntries
	}
	if s.win <= 0 {
		s.win = DefaultWindow
	}
	if s.trust <= 0 {
		s.trust = DefaultTrust
	}
	if l.Now != nil {
		s.now = l.Now()
	} else {
		s.now = time.Now()
	}
	return s
}

// open returns w's failures if its window is still open at now, else 0.
func (w *window) open(now time.Time, win time.Duration) int {
	if w == nil || now.Sub(w.start) >= win {
		return 0
	}
	return w.failures
}

// Allow reports whether user may try to log in from addr now; when not,
// wait is how long until it may, and failures how many failures the
// exhausted limit counted in its window.
func (l *Limiter) Allow(addr, user string) (ok bool, wait time.Duration, failures int) {
	s := l.settings()
	l.mu.Lock()
	defer l.mu.Unlock()
	p := pair{addr, user}
	if w := l.users[p]; w.open(s.now, s.win) >= s.max {
		return false, w.start.Add(s.win).Sub(s.now), w.failures
	}
	if w := l.addrs[addr]; w.open(s.now, s.win) >= s.perAddr {
		if last, ok := l.trusted[p]; ok && s.now.Sub(last) < s.trust {
			return true, 0, l.users[p].open(s.now, s.win)
		}
		return false, w.start.Add(s.win).Sub(s.now), w.failures
	}
	return true, 0, l.users[p].open(s.now, s.win)
}

// Fail counts a failed login of user from addr.
func (l *Limiter) Fail(addr, user string) {
	s := l.settings()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.users == nil {
		l.users, l.addrs, l.trusted = map[pair]*window{}, map[string]*window{}, map[pair]time.Time{}
	}
	count(l.users, pair{addr, user}, s)
	count(l.addrs, addr, s)
}

// Succeed records a successful login of user from addr: its failures
// there are cleared, and it is trusted at addr for Trust.
func (l *Limiter) Succeed(addr, user string) {
	s := l.settings()
	l.mu.Lock()
	defer l.mu.Unlock()
	p := pair{addr, user}
	delete(l.users, p)
	if l.trusted == nil {
		l.users, l.addrs, l.trusted = map[pair]*window{}, map[string]*window{}, map[pair]time.Time{}
	}
	if _, ok := l.trusted[p]; !ok && len(l.trusted) >= s.entries {
		for q, last := range l.trusted {
			if s.now.Sub(last) >= s.trust || len(l.trusted) >= s.entries {
				delete(l.trusted, q)
			}
		}
	}
	l.trusted[p] = s.now
}

// count adds a failure to k's window in m, opening a new window if it
// had none or its window has ended, and keeps m under s.entries.
func count[K comparable](m map[K]*window, k K, s settings) {
	if w := m[k]; w != nil && s.now.Sub(w.start) < s.win {
		w.failures++
		return
	}
	if _, ok := m[k]; !ok && len(m) >= s.entries {
		for q, w := range m {
			if s.now.Sub(w.start) >= s.win {
				delete(m, q)
			}
		}
		for q := range m {
			if len(m) < s.entries {
				break
			}
			delete(m, q)
		}
	}
	m[k] = &window{start: s.now, failures: 1}
}

// Tracked is how many addresses the limiter counts failures of, for tests
// and metrics.
func (l *Limiter) Tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs)
}
