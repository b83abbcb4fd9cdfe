package netserver_test

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/internal/testenv"
)

// handler is the smallest Handler: ApiVersions is answered at once,
// Metadata once the test releases it (a response that waits), a request
// from client id "panic" panics, and one from "login" logs the client in.
type handler struct {
	c       *netserver.Conn
	served  chan int32    // correlation ids as they are started
	release chan struct{} // closed by the test: Metadata answers
	// deferred, if set, gets each Metadata request's Deferred response
	// for the test to complete instead.
	deferred chan deferredReq
}

type deferredReq struct {
	p       *netserver.Pending
	corr    int32
	version int16
}

func (h *handler) Serve(req netserver.Request) *netserver.Pending {
	switch req.ClientID {
	case "panic":
		panic("test: handler panic")
	case "login":
		h.c.Login("User:alice")
	}
	if h.served != nil {
		h.served <- req.CorrelationID
	}
	switch r := req.Request.(type) {
	case *kmsg.MetadataRequest:
		if h.deferred != nil {
			p := netserver.Deferred()
			h.deferred <- deferredReq{p, req.CorrelationID, r.Version}
			return p
		}
		return netserver.Later(func() netserver.Response {
			<-h.release
			return netserver.Encode(req.CorrelationID, r.Version, kmsg.NewPtrMetadataResponse())
		})
	default:
		return netserver.Ready(netserver.Encode(req.CorrelationID, req.GetVersion(), kmsg.NewPtrApiVersionsResponse()))
	}
}

// start serves one listener of protocol with h's behaviour.
func start(t *testing.T, protocol netserver.SecurityProtocol, h *handler) (*netserver.Server, string) {
	t.Helper()
	return startWrapped(t, protocol, h, nil)
}

// startWrapped is start with the listening socket wrapped by wrap, if not
// nil (to watch what the server does with its connections).
func startWrapped(t *testing.T, protocol netserver.SecurityProtocol, h *handler, wrap func(net.Listener) net.Listener) (*netserver.Server, string) {
	t.Helper()
	s := netserver.New(netserver.Config{
		Logger:                            slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxRequestBytes:                   4096,
		SASLMaxReceiveSize:                512,
		RequestReadTimeout:                30 * time.Second,
		ResponseWriteTimeout:              30 * time.Second,
		ConnectionsMaxIdle:                time.Minute,
		ConnectionsMaxIdleUnauthenticated: time.Minute,
		QueuedMaxRequestBytes:             1 << 20,
		QueuedMaxRequestBytesPerIP:        1 << 20,
		QueuedMaxRequestBytesPerPrincipal: 1 << 20,
		Limits:                            func() (int, int) { return 100, 100 },
		Supports:                          func(key, version int16) bool { return (key == 18 || key == 3) && version <= 4 },
		APIVersionsFallback: func(corr int32) netserver.Response {
			return netserver.Encode(corr, 0, kmsg.NewPtrApiVersionsResponse())
		},
		NewHandler: func(c *netserver.Conn) netserver.Handler {
			h := *h
			h.c = c
			return &h
		},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var served net.Listener = ln
	if wrap != nil {
		served = wrap(ln)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve([]netserver.Listener{{Protocol: protocol}}, []net.Listener{served}) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

func send(t *testing.T, c net.Conn, clientID string, corr int32, req kmsg.Request) {
	t.Helper()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
		t.Fatal(err)
	}
}

// correlation reads one response frame and returns its correlation id, or
// the read's error (io.EOF: the server closed the connection).
func correlation(c net.Conn) (int32, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return 0, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(body)), nil
}

func apiVersions() kmsg.Request {
	r := kmsg.NewPtrApiVersionsRequest()
	r.SetVersion(3)
	r.ClientSoftwareName, r.ClientSoftwareVersion = "test", "1"
	return r
}

func metadata() kmsg.Request {
	r := kmsg.NewPtrMetadataRequest()
	r.SetVersion(4)
	return r
}

// TestResponsesKeepRequestOrder: a response ready at once waits behind
// an earlier one that is not ready yet, and Close still writes it.
func TestResponsesKeepRequestOrder(t *testing.T) {
	h := &handler{served: make(chan int32, 2), release: make(chan struct{})}
	s, addr := start(t, netserver.Plaintext, h)
	c := dial(t, addr)
	send(t, c, "t", 1, metadata())
	send(t, c, "t", 2, apiVersions())
	<-h.served
	<-h.served // the second is answered already, the first is not
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	close(h.release)
	for _, want := range []int32{1, 2} {
		if got, err := correlation(c); err != nil || got != want {
			t.Fatalf("response %d, %v; want %d", got, err, want)
		}
	}
	<-closed
}

// TestBadClientsCloseOnlyTheirConnection: an oversized frame and a
// panicking handler each close their own connection; the server keeps
// serving the others.
func TestBadClientsCloseOnlyTheirConnection(t *testing.T) {
	s, addr := start(t, netserver.Plaintext, &handler{})
	good := dial(t, addr)
	oversized := dial(t, addr)
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], 1<<30)
	oversized.Write(size[:])
	panicking := dial(t, addr)
	send(t, panicking, "panic", 1, apiVersions())
	for name, c := range map[string]net.Conn{"oversized frame": oversized, "panic": panicking} {
		if _, err := correlation(c); !errors.Is(err, io.EOF) {
			t.Errorf("%s: read %v, want the connection closed", name, err)
		}
	}
	send(t, good, "t", 7, apiVersions())
	if got, err := correlation(good); err != nil || got != 7 {
		t.Fatalf("the other connection: response %d, %v; want 7", got, err)
	}
	testenv.Eventually(t, 30*time.Second, "the closed connections are forgotten", func() bool {
		return s.Stats().Open == 1
	})
}

// TestFramesBeforeLoginAreSmall: on a SASL listener a frame larger than
// SASLMaxReceiveSize closes the connection until the handler logs the
// client in; after that it is served.
func TestFramesBeforeLoginAreSmall(t *testing.T) {
	_, addr := start(t, netserver.SASLPlaintext, &handler{})
	big := func() kmsg.Request {
		r := kmsg.NewPtrApiVersionsRequest()
		r.SetVersion(3)
		r.ClientSoftwareName, r.ClientSoftwareVersion = "test", strings.Repeat("x", 1000)
		return r
	}
	c := dial(t, addr)
	send(t, c, "t", 1, big())
	if _, err := correlation(c); !errors.Is(err, io.EOF) {
		t.Fatalf("a 1 KB frame before login: read %v, want the connection closed", err)
	}
	c = dial(t, addr)
	send(t, c, "login", 1, apiVersions())
	send(t, c, "t", 2, big())
	for _, want := range []int32{1, 2} {
		if got, err := correlation(c); err != nil || got != want {
			t.Fatalf("after login: response %d, %v; want %d", got, err, want)
		}
	}
}
