package broker_test

// Hostile and broken clients, each over a real TCP connection: the broker
// keeps serving everyone else and holds on to nothing for them.

import (
	"encoding/binary"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// emfileListener fails its first accepts with EMFILE, as a process out of
// file descriptors does.
type emfileListener struct {
	net.Listener
	failures atomic.Int32
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

func TestAcceptErrorsKeepBrokerServing(t *testing.T) {
	var logs logBuffer
	b, err := broker.New(broker.Config{DataDir: t.TempDir(), Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &emfileListener{Listener: inner}
	ln.failures.Store(5)
	served := make(chan error, 1)
	go func() { served <- b.Serve(ln) }()
	defer func() {
		b.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve after Close: %v", err)
		}
	}()

	w := dial(t, inner.Addr().String())
	w.roundTrip(kmsg.NewPtrApiVersionsRequest())
	select {
	case err := <-served:
		t.Fatalf("Serve returned while it should keep serving: %v", err)
	default:
	}
	if got := strings.Count(logs.String(), "accepting connections failed"); got != 1 {
		t.Errorf("logged %d accept failures for one burst, want 1:\n%s", got, logs.String())
	}
}

// dialFrom connects from a given loopback address, to act as another host.
func dialFrom(t *testing.T, local, addr string) *wire {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &wire{t: t, conn: c}
}

func TestConnectionCaps(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.MaxConnections = 3
		c.MaxConnectionsPerIP = 2 // set: the default would be a tenth
	}))
	served := func(w *wire) { w.roundTrip(kmsg.NewPtrApiVersionsRequest()) }

	a1, a2 := dialFrom(t, "127.0.0.1", b.Addr), dialFrom(t, "127.0.0.1", b.Addr)
	served(a1)
	served(a2)
	if !dialFrom(t, "127.0.0.1", b.Addr).closedByBroker() {
		t.Fatal("a third connection from one IP was served; max.connections.per.ip is 2")
	}
	served(dialFrom(t, "127.0.0.2", b.Addr))
	if !dialFrom(t, "127.0.0.3", b.Addr).closedByBroker() {
		t.Fatal("a fourth connection was served; max.connections is 3")
	}
	if got := b.ConnStats().Refused; got != 2 {
		t.Errorf("refused %d connections, want 2", got)
	}

	a1.conn.Close()
	testenv.Eventually(t, 10*time.Second, "the closed connection to be forgotten", func() bool {
		return b.ConnStats().Open == 2
	})
	served(dialFrom(t, "127.0.0.1", b.Addr))
}

// announce opens a connection that announces a request of size bytes and
// then sends nothing more.
func announce(t *testing.T, addr string, size uint32, body []byte) *wire {
	w := dial(t, addr)
	var frame [4]byte
	binary.BigEndian.PutUint32(frame[:], size)
	w.send(append(frame[:], body...))
	return w
}

func TestRequestReadDeadline(t *testing.T) {
	var logs logBuffer
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.RequestReadTimeout = 200 * time.Millisecond
		c.Logger = logs.logger()
	}))
	stalled := announce(t, b.Addr, 1000, []byte{0, 18, 0})
	if !stalled.closedByBroker() {
		t.Fatal("a connection that announced a frame and stopped was kept open")
	}
	if !strings.Contains(logs.String(), "request not received in time") {
		t.Errorf("the disconnection was not logged:\n%s", logs.String())
	}
	testenv.Eventually(t, 10*time.Second, "the stalled request to give back its budget", func() bool {
		s := b.ConnStats()
		return s.ReadingRequests == 0 && s.QueuedRequestBytes == 0
	})
}

func TestIdleConnectionsClosed(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		c.ConnectionsMaxIdle = 200 * time.Millisecond
	}))
	createTopic(t, b.Addr, "idle", 1, nil)

	// Waiting on its own long poll is not idleness: the fetch outlives the
	// idle limit, and the connection still serves what comes next.
	w := dial(t, b.Addr)
	fetch := fetchRequest(11, "idle", 0, 0)
	fetch.MaxWaitMillis = 1000
	fetch.MinBytes = 1
	w.roundTrip(fetch)
	w.roundTrip(kmsg.NewPtrApiVersionsRequest())

	if !w.closedByBroker() {
		t.Fatal("an idle connection was kept open past connections.max.idle.ms")
	}
}

func TestPanicInHandlerClosesOnlyItsConnection(t *testing.T) {
	for _, inLater := range []bool{false, true} {
		var logs logBuffer
		b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Logger = logs.logger() }))
		restore := broker.PanicFor("panicking-client", inLater)
		w := dial(t, b.Addr)
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(7)
		w.send(kmsg.NewRequestFormatter(kmsg.FormatterClientID("panicking-client")).AppendRequest(nil, req, 1))
		if !w.closedByBroker() {
			t.Fatalf("inLater=%v: the connection whose handler panicked was kept open", inLater)
		}
		restore()
		dial(t, b.Addr).roundTrip(kmsg.NewPtrApiVersionsRequest())
		for _, want := range []string{"panic while serving a request", "api=Metadata", "version=7", "client_id=panicking-client"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("inLater=%v: the panic log lacks %q:\n%s", inLater, want, logs.String())
			}
		}
	}
}
