package cluster_test

import (
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/internal/testenv"
)

// The ZooKeeper client reconnects within its session while requests are
// in flight and watches are set, over and over. go-zookeeper/zk v1.0.4
// reads Conn.lastZxid when it re-sends its watches after a reconnect while
// the new connection's receive loop writes it: `go test -race` fails this
// test on v1.0.4 (and made unrelated tests flaky); the patched copy in
// third_party/go-zookeeper-zk (see its TRIBUTARY.md) passes.
func TestZooKeeperClientReconnectsWithoutARace(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	addr, chroot, _ := strings.Cut(connect, "/")
	var cut cuttable
	// The address twice: after a cut the client moves to the "other"
	// server at once, where with one it would wait a second.
	conn, events, err := zk.Connect([]string{addr, addr}, 10*time.Second, zk.WithDialer(cut.dial), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitSession(t, events)
	node, bumped := "/"+chroot+"/watched", "/"+chroot+"/bumped"
	for _, n := range []string{node, bumped} {
		if _, err := conn.Create(n, []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	// Watches that never fire, so every reconnect re-sends them.
	for range 8 {
		if _, _, _, err := conn.GetW(node); err != nil {
			t.Fatal(err)
		}
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				// Answers carrying a zxid into the receive loop while
				// the watches are re-sent.
				conn.Set(bumped, []byte("y"), -1) //nolint:errcheck // a cut fails those in flight; they are sent again at once
			}
		}()
	}
	for range 30 {
		time.Sleep(20 * time.Millisecond)
		cut.cut()
		if !waitState(events, zk.StateHasSession, 10*time.Second) {
			stop.Store(true)
			wg.Wait()
			t.Fatal("no session again within 10 s of a cut connection")
		}
	}
	stop.Store(true)
	wg.Wait()
	if _, _, err := conn.Get(node); err != nil {
		t.Fatalf("after the reconnects: %v", err)
	}
}

// cuttable dials real connections and closes the current one on cut, as a
// network blip would: the client reconnects within its session. On each
// new connection it holds the client's send loop for a moment after its
// first request (past the session handshake) unless that request is the
// re-sent watches: the answer then reaches the receive loop before the
// watches go out, which is the interleaving in which v1.0.4 races (any
// other makes the two loops synchronize through the request table).
type cuttable struct {
	mu   sync.Mutex
	conn net.Conn
}

func (c *cuttable) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	held := &holdingConn{Conn: conn}
	c.mu.Lock()
	c.conn = held
	c.mu.Unlock()
	return held, nil
}

func (c *cuttable) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
	}
}

// holdingConn sleeps after its second write (the first is the session
// handshake) when that write is not SetWatches (opcode 101).
type holdingConn struct {
	net.Conn
	writes atomic.Int32
}

const opSetWatches = 101

func (h *holdingConn) Write(p []byte) (int, error) {
	n, err := h.Conn.Write(p)
	if h.writes.Add(1) == 2 && len(p) >= 12 && int32(binary.BigEndian.Uint32(p[8:12])) != opSetWatches {
		time.Sleep(50 * time.Millisecond)
	}
	return n, err
}

func waitSession(t *testing.T, events <-chan zk.Event) {
	t.Helper()
	if !waitState(events, zk.StateHasSession, 30*time.Second) {
		t.Fatal("no ZooKeeper session within 30 s")
	}
}

// waitState waits for the session to reach state, draining other events.
func waitState(events <-chan zk.Event, state zk.State, within time.Duration) bool {
	deadline := time.After(within)
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == state {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
