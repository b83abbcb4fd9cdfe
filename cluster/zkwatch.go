package cluster

import (
	"errors"
	"path"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"
)

// ZKWatch keeps at most one ZooKeeper watch armed per path and reports every
// firing on one channel. Reading through it is how the broker and consumer
// views stay current: read, and you will hear when what you read changes.
//
// The "at most one" matters: the go-zookeeper client registers a new channel
// on every ChildrenW call even when the server already has the watch, so
// re-reading a path that did not change would pile up channels forever.
//
// A caching ZKWatch (NewCachingZKWatch) also keeps what it last read of each
// path whose watch is armed, and answers from it until the watch fires:
// the cluster view and the controller re-read every partition's state on
// any change, and at thousands of partitions those reads were most of
// their work. What it answers is what ZooKeeper held at the last read,
// except for a change whose event is still on its way; that event then
// fires the watch, which drops the entry and reports on Fired, so the
// reader reads again. A writer that must read back its own write drops
// the entry first (Forget, ForgetAll).
type ZKWatch struct {
	conn  *zk.Conn
	fired chan struct{}
	cache bool

	mu    sync.Mutex
	armed map[string]*watchEntry
	subs  []chan struct{} // Subscribe's channels, told along with fired
	// loading holds the Get of each path in flight: a concurrent Get of
	// the same path waits for it rather than asking ZooKeeper again
	// (Forget detaches it, so a writer never joins a read older than its
	// write).
	loading map[string]*loadCall
}

// loadCall is a Get in flight and, once done is closed, its result.
type loadCall struct {
	done    chan struct{}
	data    []byte
	version int32
	ok      bool
	err     error
}

// watchEntry is one armed watch and, when caching, what was last read.
type watchEntry struct {
	cached  bool
	data    []byte
	version int32
	ok      bool
	kids    []string
}

// NewZKWatch starts an empty set of watches on conn.
func NewZKWatch(conn *zk.Conn) *ZKWatch {
	return &ZKWatch{conn: conn, fired: make(chan struct{}, 1), armed: map[string]*watchEntry{}}
}

// NewCachingZKWatch is NewZKWatch answering from what it last read while a
// path's watch is armed (see ZKWatch).
func NewCachingZKWatch(conn *zk.Conn) *ZKWatch {
	w := NewZKWatch(conn)
	w.cache = true
	return w
}

// Fired receives (coalesced) after any watched path changed, and when the
// watches were lost with an expired session: read again.
func (w *ZKWatch) Fired() <-chan struct{} { return w.fired }

// Subscribe returns another channel told, like Fired, of every firing, for
// a second reader sharing the watches (and, caching, what they keep): the
// controller shares the cluster view's, so at a broker's failure each
// changed state node is read once per broker, not once for the view and
// again for the controller, and a broker that becomes controller finds
// every state in its cache. The caller may send on it too (coalesced), to
// wake itself.
func (w *ZKWatch) Subscribe() chan struct{} {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.subs = append(w.subs, ch)
	w.mu.Unlock()
	return ch
}

// notifyAll tells Fired and every subscriber.
func (w *ZKWatch) notifyAll() {
	notify(w.fired)
	w.mu.Lock()
	subs := w.subs
	w.mu.Unlock()
	for _, ch := range subs {
		notify(ch)
	}
}

// arm returns path's entry, creating it (fresh true: the caller sets the
// watch) if there is none.
func (w *ZKWatch) arm(path string) (e *watchEntry, fresh bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e = w.armed[path]; e != nil {
		return e, false
	}
	e = &watchEntry{}
	w.armed[path] = e
	return e, true
}

// keep records a read in e if caching and e is still path's entry.
func (w *ZKWatch) keep(path string, e *watchEntry, set func()) {
	if !w.cache {
		return
	}
	w.mu.Lock()
	if w.armed[path] == e {
		set()
		e.cached = true
	}
	w.mu.Unlock()
}

// Children lists the children of path and makes sure a watch on them is
// armed. The path must exist.
func (w *ZKWatch) Children(path string) ([]string, error) {
	w.mu.Lock()
	if e := w.armed[path]; e != nil && e.cached {
		kids := slices.Clone(e.kids)
		w.mu.Unlock()
		return kids, nil
	}
	w.mu.Unlock()
	e, fresh := w.arm(path)
	if !fresh {
		watchReads.Add(1)
		kids, _, err := w.conn.Children(path)
		if err == nil {
			w.keep(path, e, func() { e.kids = slices.Clone(kids) })
		}
		return kids, err
	}
	watchReads.Add(1)
	kids, _, ch, err := w.conn.ChildrenW(path)
	if err != nil {
		w.disarm(path, e)
		return nil, err
	}
	w.keep(path, e, func() { e.kids = slices.Clone(kids) })
	go func() {
		<-ch // a change, or EventNotWatching when the session is lost
		w.disarm(path, e)
		w.notifyAll()
	}()
	return kids, nil
}

func (w *ZKWatch) disarm(path string, e *watchEntry) {
	w.mu.Lock()
	if w.armed[path] == e {
		delete(w.armed, path)
	}
	w.mu.Unlock()
}

// Forget drops what a caching ZKWatch keeps of path and of its parent's
// children (after this process wrote, created or deleted it): the next
// read asks ZooKeeper. The watches stay armed.
func (w *ZKWatch) Forget(p string) {
	w.mu.Lock()
	for _, k := range []string{p, path.Dir(p)} {
		if e := w.armed[k]; e != nil {
			e.cached = false
		}
		delete(w.loading, k)
	}
	w.mu.Unlock()
}

// ForgetAll drops everything a caching ZKWatch keeps.
func (w *ZKWatch) ForgetAll() {
	w.mu.Lock()
	for _, e := range w.armed {
		e.cached = false
	}
	clear(w.loading)
	w.mu.Unlock()
}

// Get reads path's data and makes sure a watch on it is armed; a missing
// node gives ok false and a watch that fires when it is created. A Get of
// a path another Get is reading shares that read: at a broker's failure
// the view's refresh and the controller's round read the same thousands of
// changed states at once.
func (w *ZKWatch) Get(path string) (data []byte, version int32, ok bool, err error) {
	w.mu.Lock()
	if e := w.armed[path]; e != nil && e.cached {
		data, version, ok = e.data, e.version, e.ok
		w.mu.Unlock()
		return data, version, ok, nil
	}
	if c := w.loading[path]; c != nil {
		w.mu.Unlock()
		<-c.done
		return c.data, c.version, c.ok, c.err
	}
	c := &loadCall{done: make(chan struct{})}
	if w.loading == nil {
		w.loading = map[string]*loadCall{}
	}
	w.loading[path] = c
	w.mu.Unlock()
	c.data, c.version, c.ok, c.err = w.load(path)
	w.mu.Lock()
	if w.loading[path] == c {
		delete(w.loading, path)
	}
	w.mu.Unlock()
	close(c.done)
	return c.data, c.version, c.ok, c.err
}

// load is Get's read from ZooKeeper.
func (w *ZKWatch) load(path string) (data []byte, version int32, ok bool, err error) {
	e, fresh := w.arm(path)
	if !fresh {
		watchReads.Add(1)
		data, st, err := w.conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			w.keep(path, e, func() { e.data, e.version, e.ok = nil, 0, false })
			return nil, 0, false, nil
		}
		if err != nil {
			return nil, 0, false, err
		}
		w.keep(path, e, func() { e.data, e.version, e.ok = data, st.Version, true })
		return data, st.Version, true, nil
	}
	watchReads.Add(1)
	data, st, ch, err := w.conn.GetW(path)
	found, racing := err == nil, false
	if errors.Is(err, zk.ErrNoNode) {
		exists := false
		exists, _, ch, err = w.conn.ExistsW(path)
		if err == nil && exists {
			racing = true
			w.notifyAll() // created between the two calls: read again
		}
	}
	if err != nil {
		w.disarm(path, e)
		return nil, 0, false, err
	}
	go func() {
		<-ch
		w.disarm(path, e)
		w.notifyAll()
	}()
	if !found {
		if !racing { // the next read must not find "missing" kept
			w.keep(path, e, func() { e.data, e.version, e.ok = nil, 0, false })
		}
		return nil, 0, false, nil
	}
	w.keep(path, e, func() { e.data, e.version, e.ok = data, st.Version, true })
	return data, st.Version, true, nil
}
