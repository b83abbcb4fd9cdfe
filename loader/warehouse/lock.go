package warehouse

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Lock is a lease on a name in the warehouse, held by one process at a
// time and renewed by it in the background. If the holder dies, its lease
// runs out and the next AcquireLock takes the lock over: nothing has to be
// cleaned up by hand.
//
// The lock is a sequence of generation files, LockDir/<name>/<gen>.lock,
// each holding a LockInfo. Taking the lock means creating generation n+1
// exclusively once generation n is released or expired, so two processes
// racing to take over an expired lock cannot both win; the holder renews by
// atomically rewriting its own generation and gives the lock up as soon as
// it sees a newer generation or finds its lease already run out.
//
// Expiry compares the holder's clock (which wrote Expires) with the
// taker's: clocks of the machines sharing a warehouse must agree to well
// within the TTL.
type Lock struct {
	now   func() time.Time
	fsys  FS
	name  string
	dir   string
	gen   int64
	ttl   time.Duration
	info  LockInfo
	token string

	mu      sync.Mutex
	expires time.Time
	lostErr error

	lost chan struct{}
	stop chan struct{}
	done chan struct{}
}

// LockInfo is what a lock file says about its holder.
type LockInfo struct {
	Name     string    `json:"name"`
	Holder   string    `json:"holder"` // free text, e.g. "jobs daemon"
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Token    string    `json:"token"` // random, tells holders apart
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires"`
	Released bool      `json:"released,omitempty"`
}

// LockedError says who holds a lock that could not be taken.
type LockedError struct {
	Name string
	Info LockInfo
}

func (e *LockedError) Error() string {
	if e.Info.Host == "" {
		return fmt.Sprintf("lock %q is being taken by another process", e.Name)
	}
	return fmt.Sprintf("lock %q is held by %s (host %s, pid %d) since %s; its lease runs until %s",
		e.Name, e.Info.Holder, e.Info.Host, e.Info.PID,
		e.Info.Acquired.Format(time.RFC3339), e.Info.Expires.Format(time.RFC3339))
}

// ErrLockLost is reported by Lock.Err once the holder no longer holds the
// lock (its lease ran out before it could renew, or another process took
// it over).
var ErrLockLost = errors.New("lock lost")

// A LockOption changes how AcquireLock and ReadLock work.
type LockOption func(*lockOptions)

type lockOptions struct {
	now func() time.Time
}

func newLockOptions(opts []LockOption) lockOptions {
	o := lockOptions{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// LockClock makes a lock read the time from now instead of time.Now: when
// a lease starts, when it runs out, and whether it is nearly out. Tests
// advance such a clock to let a lease expire without waiting for it.
// Renewal is still paced by real time (every ttl/4); each renewal extends
// the lease to now()+ttl. The age of a file (a generation still being
// written, a leftover temporary file) is measured in real time, as the
// warehouse stamps modification times with its own clock: a clock moved
// ahead must not make a file written a moment ago look abandoned.
func LockClock(now func() time.Time) LockOption {
	return func(o *lockOptions) { o.now = now }
}

// AcquireLock takes the lock name (a path-safe word) with a lease of ttl,
// or returns a *LockedError naming the holder. holder describes the caller
// in the lock file. The lease is renewed every ttl/4 until Release.
func AcquireLock(fsys FS, name, holder string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	o := newLockOptions(opts)
	if ttl <= 0 {
		return nil, fmt.Errorf("lock %q: ttl must be positive", name)
	}
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return nil, fmt.Errorf("lock name %q: must be one path element", name)
	}
	dir := path.Join(LockDir, name)
	gen, cur, stale, err := lockState(fsys, dir, ttl)
	if err != nil {
		return nil, fmt.Errorf("lock %q in %s: %w", name, fsys, err)
	}
	now := o.now()
	if cur != nil && !cur.Released && cur.Expires.After(now) {
		return nil, &LockedError{Name: name, Info: *cur}
	}
	if cur == nil && gen > 0 && !stale {
		// A generation file exists but is still being written.
		return nil, &LockedError{Name: name}
	}
	host, _ := os.Hostname()
	l := &Lock{
		now: o.now, fsys: fsys, name: name, dir: dir, gen: gen + 1, ttl: ttl, token: randomToken(),
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
	}
	l.info = LockInfo{Name: name, Holder: holder, Host: host, PID: os.Getpid(), Token: l.token, Acquired: now, Expires: now.Add(ttl)}
	data, _ := json.Marshal(l.info)
	if err := fsys.CreateExclusive(l.file(l.gen), data); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process took generation gen+1 first.
			_, winner, _, _ := lockState(fsys, dir, ttl)
			if winner == nil {
				return nil, &LockedError{Name: name}
			}
			return nil, &LockedError{Name: name, Info: *winner}
		}
		return nil, fmt.Errorf("lock %q in %s: %w", name, fsys, err)
	}
	l.expires = l.info.Expires
	// Older generations and renewals left behind by dead holders.
	if entries, err := fsys.ReadDir(dir); err == nil {
		for _, e := range entries {
			if g, ok := lockGen(e.Name()); ok {
				if g < l.gen {
					fsys.Remove(path.Join(dir, e.Name()))
				}
			} else if time.Since(e.ModTime()) > ttl {
				fsys.Remove(path.Join(dir, e.Name()))
			}
		}
	}
	go l.renew()
	return l, nil
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// Info is what this holder wrote in the lock file.
func (l *Lock) Info() LockInfo { return l.info }

// Lost is closed when the lock is lost.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Check returns nil if the lock is still held, with at least a tenth of its
// lease left, and no newer generation exists. Call it right before an
// action only the holder may take.
func (l *Lock) Check() error {
	l.mu.Lock()
	lostErr, expires := l.lostErr, l.expires
	l.mu.Unlock()
	if lostErr != nil {
		return lostErr
	}
	if expires.Sub(l.now()) < l.ttl/10 {
		return fmt.Errorf("%w: lock %q: lease nearly run out (renewal is late)", ErrLockLost, l.name)
	}
	newer, err := l.newerGeneration()
	if err != nil {
		return fmt.Errorf("lock %q: checking it is still held: %w", l.name, err)
	}
	if newer {
		return fmt.Errorf("%w: lock %q was taken over by another process", ErrLockLost, l.name)
	}
	return nil
}

// Err is nil while the lock is held, and says why once it was lost.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// Abandon stops renewing without releasing: the lock stays taken until its
// lease runs out, as if this process had died. For crash tests.
func (l *Lock) Abandon() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// Release stops renewing and marks the lock free, so the next process need
// not wait for the lease to run out. Safe to call twice.
func (l *Lock) Release() error {
	select {
	case <-l.stop:
		<-l.done
		return nil
	default:
	}
	close(l.stop)
	<-l.done
	if l.Err() != nil {
		return nil // someone else's now; leave it alone
	}
	info := l.info
	info.Released = true
	info.Expires = l.now()
	return l.write(info)
}

func (l *Lock) renew() {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 4)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		if err := l.renewOnce(); err != nil {
			l.mu.Lock()
			if l.lostErr == nil {
				l.lostErr = err
				close(l.lost)
			}
			l.mu.Unlock()
			if errors.Is(err, ErrLockLost) {
				return
			}
		}
	}
}

// renewOnce extends the lease. A transient error (warehouse briefly
// unreachable) is returned but the next tick tries again; running out of
// lease is final.
func (l *Lock) renewOnce() error {
	l.mu.Lock()
	expires := l.expires
	l.mu.Unlock()
	if !l.now().Before(expires) {
		return fmt.Errorf("%w: lock %q: lease ran out before it could be renewed", ErrLockLost, l.name)
	}
	newer, err := l.newerGeneration()
	if err != nil {
		return err
	}
	if newer {
		return fmt.Errorf("%w: lock %q was taken over by another process", ErrLockLost, l.name)
	}
	info := l.info
	info.Expires = l.now().Add(l.ttl)
	if err := l.write(info); err != nil {
		return err
	}
	l.mu.Lock()
	l.expires = info.Expires
	l.mu.Unlock()
	return nil
}

// write replaces this generation's file atomically: in an object store
// by one PUT (whole or not at all), elsewhere through a temporary file
// and a rename. Only the holder writes its generation, and a takeover
// creates the next one, so the write needs no condition.
func (l *Lock) write(info LockInfo) error {
	data, _ := json.Marshal(info)
	if WholeObjectWrites(l.fsys) {
		return WriteFile(l.fsys, l.file(l.gen), data)
	}
	tmp := l.file(l.gen) + "." + randomToken() + ".tmp"
	if err := WriteFile(l.fsys, tmp, data); err != nil {
		return err
	}
	if err := l.fsys.Rename(tmp, l.file(l.gen)); err != nil {
		l.fsys.Remove(tmp)
		return err
	}
	return nil
}

func (l *Lock) newerGeneration() (bool, error) {
	entries, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if g, ok := lockGen(e.Name()); ok && g > l.gen {
			return true, nil
		}
	}
	return false, nil
}

func (l *Lock) file(gen int64) string { return path.Join(l.dir, fmt.Sprintf("%012d.lock", gen)) }

// ReadLock returns the current holder of a lock, or nil if nobody holds it.
func ReadLock(fsys FS, name string, ttl time.Duration, opts ...LockOption) (*LockInfo, error) {
	o := newLockOptions(opts)
	_, cur, _, err := lockState(fsys, path.Join(LockDir, name), ttl)
	if err != nil || cur == nil || cur.Released || !cur.Expires.After(o.now()) {
		return nil, err
	}
	return cur, nil
}

// lockState returns the newest generation in dir and what it says. A
// generation file that cannot be read yet (its creator may still be writing
// it) counts as stale once it is older than ttl.
func lockState(fsys FS, dir string, ttl time.Duration) (gen int64, info *LockInfo, stale bool, err error) {
	entries, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	var newest fs.FileInfo
	for _, e := range entries {
		if g, ok := lockGen(e.Name()); ok && g > gen {
			gen, newest = g, e
		}
	}
	if newest == nil {
		return 0, nil, false, nil
	}
	data, err := readLockFile(fsys, path.Join(dir, newest.Name()))
	if errors.Is(err, fs.ErrNotExist) {
		return lockState(fsys, dir, ttl) // replaced meanwhile
	}
	li, ok := decodeLockInfo(data)
	if err != nil || !ok {
		return gen, nil, time.Since(newest.ModTime()) > ttl, nil
	}
	return gen, li, false, nil
}

// maxLockFile bounds what is read of a lock file (a holder writes a few
// hundred bytes), so a damaged one cannot exhaust memory.
const maxLockFile = 64 << 10

func readLockFile(fsys FS, name string) ([]byte, error) {
	r, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, maxLockFile+1))
}

// decodeLockInfo reads a lock file; ok is false for one that is not (yet)
// a complete LockInfo: still being written, damaged or too large.
func decodeLockInfo(data []byte) (li *LockInfo, ok bool) {
	if len(data) > maxLockFile {
		return nil, false
	}
	var info LockInfo
	if json.Unmarshal(data, &info) != nil || info.Token == "" {
		return nil, false
	}
	return &info, true
}

// lockGen returns the generation a lock file's name holds. Only the names
// Lock.file writes count, and only generations that have a successor, so
// that a stray "-1.lock", "+7.lock" or a generation at the top of int64
// cannot make holders disagree on which generation is newest.
func lockGen(name string) (int64, bool) {
	s, ok := strings.CutSuffix(name, ".lock")
	if !ok || len(s) < 12 {
		return 0, false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	g, err := strconv.ParseInt(s, 10, 64)
	if err != nil || g == math.MaxInt64 || fmt.Sprintf("%012d", g) != s {
		return 0, false
	}
	return g, true
}

func randomToken() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
