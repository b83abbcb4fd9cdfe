package netserver_test

import (
	"net"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/netserver"
)

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestReadyResponsesShareAWrite: a pipelining client's answers that are
// ready together leave in one write, in request order, not one write
// each (at acks=all a flush completes many requests at once, and every
// write was a syscall, a TCP segment and a wake-up of the client).
func TestReadyResponsesShareAWrite(t *testing.T) {
	var writes atomic.Int64
	h := &handler{served: make(chan int32, 10), release: make(chan struct{})}
	_, addr := startWrapped(t, netserver.Plaintext, h, func(ln net.Listener) net.Listener {
		return countingListener{ln, &writes}
	})
	c := dial(t, addr)
	send(t, c, "t", 1, metadata()) // waits for release: the rest queue behind it
	for corr := int32(2); corr <= 10; corr++ {
		send(t, c, "t", corr, apiVersions()) // ready at once
	}
	for range 10 {
		<-h.served
	}
	// Requests 2 to 9 are queued (the read loop queued each before
	// starting the next); 10 may still be on its way.
	before := writes.Load()
	close(h.release)
	for want := int32(1); want <= 10; want++ {
		if got, err := correlation(c); err != nil || got != want {
			t.Fatalf("response %d, %v; want %d", got, err, want)
		}
	}
	if n := writes.Load() - before; n > 2 {
		t.Errorf("10 answers ready together took %d writes, want at most 2", n)
	}
}

// TestPipelinedAnswersGoToTheWriter: while the client's next request is
// already read, the read loop leaves its ready answer to the writer (which
// sends the answers ready together in one write) instead of writing each
// itself. (That a lone request's answer is written by the read loop is
// TestReadyResponsesWrittenInline's, in broker/: here the writer may not
// yet have counted its last answer done when the next lone request comes,
// and then takes that one too.)
func TestPipelinedAnswersGoToTheWriter(t *testing.T) {
	var inline atomic.Int64
	defer netserver.OnInlineWrite(func() { inline.Add(1) })()
	_, addr := start(t, netserver.Plaintext, &handler{})
	c := dial(t, addr)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("t"))
	var frames []byte
	for corr := int32(1); corr <= 10; corr++ {
		frames = append(frames, f.AppendRequest(nil, apiVersions(), corr)...) // it frames from dst[0]
	}
	if _, err := c.Write(frames); err != nil { // one segment: read at once
		t.Fatal(err)
	}
	for want := int32(1); want <= 10; want++ {
		if got, err := correlation(c); err != nil || got != want {
			t.Fatalf("response %d, %v; want %d", got, err, want)
		}
	}
	if n := inline.Load(); n > 1 {
		t.Errorf("the read loop wrote %d of 10 pipelined answers itself, want at most the last", n)
	}
}
