// Package loginlimit bounds password guessing: it counts failed logins per
// client address, and once an address has failed Max times within Window,
// refuses its further attempts until that window ends, without checking
// them. The broker's SASL logins and the schema registry's basic auth
// share it.
//
// What a caller may rely on:
//
//   - Memory is bounded: at most MaxAddrs addresses are tracked. When full,
//     addresses whose window has ended are forgotten first, then an
//     arbitrary one; so an attacker spraying from more addresses than that
//     can evade the limit, but never grow the table.
//   - A successful login does not clear an address's failures: otherwise
//     one valid account would reset the count for guessing others.
//   - Refusals report how long until the address may try again.
package loginlimit

import (
	"sync"
	"time"
)

// Defaults of a zero Limiter.
const (
	DefaultMax      = 10
	DefaultWindow   = time.Minute
	DefaultMaxAddrs = 10000
)

// Limiter counts failed logins per address. Its zero value is usable,
// with the defaults; it is safe for concurrent use.
type Limiter struct {
	Max      int           // failures allowed per window; default DefaultMax
	Window   time.Duration // default DefaultWindow
	MaxAddrs int           // addresses tracked at most; default DefaultMaxAddrs
	// Now is the clock; default time.Now. Tests set it.
	Now func() time.Time

	mu    sync.Mutex
	addrs map[string]*window
}

// window is one address's failures since start.
type window struct {
	start    time.Time
	failures int
}

func (l *Limiter) settings() (max int, win time.Duration, now time.Time) {
	max, win = l.Max, l.Window
	if max <= 0 {
		max = DefaultMax
	}
	if win <= 0 {
		win = DefaultWindow
	}
	if l.Now != nil {
		now = l.Now()
	} else {
		now = time.Now()
	}
	return max, win, now
}

// Allow reports whether addr may try to log in now; when not, wait is how
// long until it may, and failures how many it had in the window.
func (l *Limiter) Allow(addr string) (ok bool, wait time.Duration, failures int) {
	max, win, now := l.settings()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.addrs[addr]
	if w == nil || now.Sub(w.start) >= win {
		return true, 0, 0
	}
	if w.failures < max {
		return true, 0, w.failures
	}
	return false, w.start.Add(win).Sub(now), w.failures
}

// Fail counts a failed login from addr.
func (l *Limiter) Fail(addr string) {
	_, win, now := l.settings()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addrs == nil {
		l.addrs = map[string]*window{}
	}
	w := l.addrs[addr]
	if w != nil && now.Sub(w.start) < win {
		w.failures++
		return
	}
	if w == nil {
		l.makeRoom(now, win)
	}
	l.addrs[addr] = &window{start: now, failures: 1}
}

// makeRoom keeps the table under MaxAddrs before an address is added.
func (l *Limiter) makeRoom(now time.Time, win time.Duration) {
	limit := l.MaxAddrs
	if limit <= 0 {
		limit = DefaultMaxAddrs
	}
	if len(l.addrs) < limit {
		return
	}
	for a, w := range l.addrs {
		if now.Sub(w.start) >= win {
			delete(l.addrs, a)
		}
	}
	for a := range l.addrs {
		if len(l.addrs) < limit {
			break
		}
		delete(l.addrs, a)
	}
}

// Tracked is how many addresses the table holds, for tests and metrics.
func (l *Limiter) Tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs)
}
