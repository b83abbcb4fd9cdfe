package cluster

import (
	"errors"
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
type ZKWatch struct {
	conn  *zk.Conn
	fired chan struct{}

	mu    sync.Mutex
	armed map[string]bool
}

// NewZKWatch starts an empty set of watches on conn.
func NewZKWatch(conn *zk.Conn) *ZKWatch {
	return &ZKWatch{conn: conn, fired: make(chan struct{}, 1), armed: map[string]bool{}}
}

// Fired receives (coalesced) after any watched path changed, and when the
// watches were lost with an expired session: read again.
func (w *ZKWatch) Fired() <-chan struct{} { return w.fired }

// Children lists the children of path and makes sure a watch on them is
// armed. The path must exist.
func (w *ZKWatch) Children(path string) ([]string, error) {
	w.mu.Lock()
	armed := w.armed[path]
	w.armed[path] = true
	w.mu.Unlock()
	if armed {
		kids, _, err := w.conn.Children(path)
		return kids, err
	}
	kids, _, ch, err := w.conn.ChildrenW(path)
	if err != nil {
		w.disarm(path)
		return nil, err
	}
	go func() {
		<-ch // a change, or EventNotWatching when the session is lost
		w.disarm(path)
		notify(w.fired)
	}()
	return kids, nil
}

func (w *ZKWatch) disarm(path string) {
	w.mu.Lock()
	delete(w.armed, path)
	w.mu.Unlock()
}

// Get reads path's data and makes sure a watch on it is armed; a missing
// node gives ok false and a watch that fires when it is created.
func (w *ZKWatch) Get(path string) (data []byte, version int32, ok bool, err error) {
	w.mu.Lock()
	armed := w.armed[path]
	w.armed[path] = true
	w.mu.Unlock()
	if armed {
		data, st, err := w.conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, 0, false, nil
		}
		if err != nil {
			return nil, 0, false, err
		}
		return data, st.Version, true, nil
	}
	data, st, ch, err := w.conn.GetW(path)
	found := err == nil
	if errors.Is(err, zk.ErrNoNode) {
		var exists bool
		exists, _, ch, err = w.conn.ExistsW(path)
		if err == nil && exists {
			notify(w.fired) // created between the two calls: read again
		}
	}
	if err != nil {
		w.disarm(path)
		return nil, 0, false, err
	}
	go func() {
		<-ch
		w.disarm(path)
		notify(w.fired)
	}()
	if !found {
		return nil, 0, false, nil
	}
	return data, st.Version, true, nil
}
