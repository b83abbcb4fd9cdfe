package mirror_test

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// holdLink is a TCP proxy in front of a broker that can hold back what
// clients send: a held connection's requests are read from the client (so
// the client believes them sent) and kept until release, then delivered in
// order, even when the client has died meanwhile. It is how the tests make
// the mirror's windows happen on demand: a dead process's request that
// lands late, a replica that stops fetching. Answers are never held.
type holdLink struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	cond  *sync.Cond
	conns []*heldConn
	// holdClient holds every connection, present and future, whose first
	// request names a client id with this prefix ("" none).
	holdClient string
}

type heldConn struct {
	held     bool
	clientID string
	pending  [][]byte // read from the client, not yet delivered
	bytes    int      // held back now
	eof      bool     // the client closed its side
	// atProduce holds the connection from its next Produce request on.
	atProduce bool
	up        net.Conn
}

// startHoldLink proxies a new local address to upstream until the test ends.
func startHoldLink(t testing.TB, upstream string) *holdLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &holdLink{ln: ln, upstream: upstream}
	l.cond = sync.NewCond(&l.mu)
	t.Cleanup(func() {
		ln.Close()
		l.mu.Lock()
		for _, c := range l.conns {
			c.up.Close()
		}
		l.mu.Unlock()
	})
	go l.accept()
	return l
}

func (l *holdLink) Addr() string { return l.ln.Addr().String() }

func (l *holdLink) accept() {
	for {
		down, err := l.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", l.upstream)
		if err != nil {
			down.Close()
			continue
		}
		c := &heldConn{up: up}
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
		go func() { io.Copy(down, up); down.Close() }()
		go l.read(c, down)
		go l.deliver(c)
	}
}

// read takes the client's requests, one by one, into the connection's
// queue.
func (l *holdLink) read(c *heldConn, down net.Conn) {
	first := true
	for {
		var size [4]byte
		_, err := io.ReadFull(down, size[:])
		var req []byte
		if err == nil {
			req = make([]byte, 4+int(binary.BigEndian.Uint32(size[:])))
			copy(req, size[:])
			_, err = io.ReadFull(down, req[4:])
		}
		l.mu.Lock()
		if err == nil {
			if first {
				first = false
				c.clientID = clientID(req)
				if l.holdClient != "" && strings.HasPrefix(c.clientID, l.holdClient) {
					c.held = true
				}
			}
			if c.atProduce && binary.BigEndian.Uint16(req[4:6]) == 0 { // a Produce request
				c.held, c.atProduce = true, false
			}
			c.pending = append(c.pending, req)
			if c.held {
				c.bytes += len(req)
			}
		} else {
			c.eof = true
		}
		l.cond.Broadcast()
		l.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// deliver passes the queue on to the broker whenever the connection is not
// held, and closes the broker's side once the client's is closed and
// everything was delivered.
func (l *holdLink) deliver(c *heldConn) {
	for {
		l.mu.Lock()
		for c.held || len(c.pending) == 0 && !c.eof {
			l.cond.Wait()
		}
		if len(c.pending) == 0 {
			l.mu.Unlock()
			c.up.Close()
			return
		}
		chunk := c.pending[0]
		c.pending = c.pending[1:]
		l.mu.Unlock()
		if _, err := c.up.Write(chunk); err != nil {
			return
		}
	}
}

// HoldProduce holds the connections open now of clients whose id starts
// with prefix, each from its next Produce request on: the link then holds
// copies their client believes sent, which the broker has not seen. Later
// connections pass.
func (l *holdLink) HoldProduce(prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		if strings.HasPrefix(c.clientID, prefix) {
			c.atProduce = true
		}
	}
}

// HoldClient holds the connections, present and future, of clients whose
// id starts with prefix.
func (l *holdLink) HoldClient(prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holdClient = prefix
	for _, c := range l.conns {
		if strings.HasPrefix(c.clientID, prefix) {
			c.held = true
		}
	}
}

// Held is how many bytes clients sent that the link holds back.
func (l *holdLink) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.conns {
		if c.held {
			n += c.bytes
		}
	}
	return n
}

// Release delivers everything held, in order, and holds nothing more.
func (l *holdLink) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holdClient = ""
	for _, c := range l.conns {
		c.held, c.atProduce, c.bytes = false, false, 0
	}
	l.cond.Broadcast()
}

// clientID reads the client id of a Kafka request: its size, key,
// version, correlation id, then the id as a 16-bit length and its bytes.
func clientID(b []byte) string {
	if len(b) < 14 {
		return ""
	}
	n := int(int16(binary.BigEndian.Uint16(b[12:14])))
	if n < 0 || len(b) < 14+n {
		return ""
	}
	return string(b[14 : 14+n])
}
