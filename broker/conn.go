package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxInFlight bounds the requests read from one connection whose responses
// are not written yet; past it the connection stops reading (backpressure).
const maxInFlight = 32

// conn serves one client connection. Requests are read and started in order
// by serve; a writer goroutine writes their responses in the same order,
// waiting for each one, so a slow acks=all produce or a long-poll fetch
// delays the responses behind it but never reorders them.
type conn struct {
	b      *Broker
	nc     net.Conn
	logger *slog.Logger

	queue   chan *pending
	stopped chan struct{} // closed by stopReading
	once    sync.Once
}

// pending is one request's response, ready once done is closed.
type pending struct {
	done chan struct{}
	resp response // nil: no response (acks=0 produce)
}

// response is anything that can write itself, with its frame, to a
// connection: an encoded kmsg response or a zero-copy fetch response.
type response interface {
	writeTo(nc net.Conn) error
}

// request is a decoded request with its header.
type request struct {
	kmsg.Request
	correlationID int32
	clientID      string
}

func newConn(b *Broker, nc net.Conn) *conn {
	return &conn{
		b:       b,
		nc:      nc,
		logger:  b.logger.With("remote", nc.RemoteAddr().String()),
		queue:   make(chan *pending, maxInFlight),
		stopped: make(chan struct{}),
	}
}

// stopReading makes serve stop after the request it is reading; responses
// to requests already read are still written.
func (c *conn) stopReading() {
	c.once.Do(func() {
		close(c.stopped)
		c.nc.SetReadDeadline(time.Now())
	})
}

func (c *conn) serve() {
	writerDone := make(chan struct{})
	go c.writeLoop(writerDone)
	c.readLoop()
	close(c.queue)
	<-writerDone
	c.nc.Close()
}

func (c *conn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var sizeBuf [4]byte
	for {
		if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
			c.logReadEnd(err)
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 8 || size > c.b.cfg.MaxRequestBytes {
			// Checked before allocating: a frame may claim any size.
			c.logger.Warn("closing connection: request size out of bounds",
				"size", size, "max", c.b.cfg.MaxRequestBytes, "setting", "socket.request.max.bytes")
			return
		}
		frame := make([]byte, size)
		if _, err := io.ReadFull(r, frame); err != nil {
			c.logReadEnd(err)
			return
		}
		req, err := decodeRequest(frame)
		if err != nil {
			var unsup *unsupportedVersion
			if errors.As(err, &unsup) && unsup.key == apiVersionsKey {
				// Clients probe ApiVersions with versions newer than ours;
				// the protocol says to answer v0 with our ranges.
				c.enqueue(ready(apiVersionsUnsupported(unsup.correlationID)))
				continue
			}
			c.logger.Warn("closing connection: malformed request", "err", err)
			return
		}
		c.enqueue(c.b.handle(c, req))
		select {
		case <-c.stopped:
			return
		default:
		}
	}
}

func (c *conn) logReadEnd(err error) {
	select {
	case <-c.stopped:
		return
	default:
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		c.logger.Warn("closing connection: request frame cut short")
		return
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		c.logger.Debug("connection read ended", "err", err)
	}
}

func (c *conn) enqueue(p *pending) {
	c.queue <- p
}

func (c *conn) writeLoop(done chan<- struct{}) {
	defer close(done)
	failed := false
	for p := range c.queue {
		<-p.done
		if failed || p.resp == nil {
			continue
		}
		if err := p.resp.writeTo(c.nc); err != nil {
			// The client went away; drain the rest so handlers finish.
			failed = true
			c.nc.Close()
			c.logger.Debug("writing response", "err", err)
		}
	}
}

// ready wraps a response that is complete at once.
func ready(r response) *pending {
	p := &pending{done: make(chan struct{}), resp: r}
	close(p.done)
	return p
}

// later returns a pending response completed by fill in its own goroutine.
func later(fill func() response) *pending {
	p := &pending{done: make(chan struct{})}
	go func() {
		p.resp = fill()
		close(p.done)
	}()
	return p
}

type unsupportedVersion struct {
	key, version  int16
	correlationID int32
}

func (e *unsupportedVersion) Error() string {
	return fmt.Sprintf("api key %d version %d is not supported", e.key, e.version)
}

// decodeRequest parses a request header and body. The header is v1
// (key, version, correlation id, nullable client id) or, for flexible
// versions, v2 (the same followed by tagged fields).
func decodeRequest(frame []byte) (*request, error) {
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corr := int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]
	if len(rest) < 2 {
		return nil, errors.New("request header cut short")
	}
	idLen := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	var clientID string
	if idLen > 0 {
		if int(idLen) > len(rest) {
			return nil, errors.New("client id longer than the request")
		}
		clientID = string(rest[:idLen])
		rest = rest[idLen:]
	}
	vr, ok := supported[key]
	if !ok {
		return nil, fmt.Errorf("unsupported api key %d", key)
	}
	if version < vr.min || version > vr.max {
		return nil, &unsupportedVersion{key: key, version: version, correlationID: corr}
	}
	kreq := kmsg.RequestForKey(key)
	kreq.SetVersion(version)
	if kreq.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return nil, fmt.Errorf("request header tags: %w", err)
		}
	}
	if err := kreq.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("decoding %s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	return &request{Request: kreq, correlationID: corr, clientID: clientID}, nil
}

// skipTags skips a tagged-fields section: a count, then (tag, size, bytes).
func skipTags(b []byte) ([]byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, io.ErrUnexpectedEOF
	}
	b = b[w:]
	for range n {
		if _, w = binary.Uvarint(b); w <= 0 {
			return nil, io.ErrUnexpectedEOF
		}
		b = b[w:]
		size, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < size {
			return nil, io.ErrUnexpectedEOF
		}
		b = b[w+int(size):]
	}
	return b, nil
}

// encoded is a kmsg response framed for the wire.
type encoded []byte

func (e encoded) writeTo(nc net.Conn) error {
	_, err := nc.Write(e)
	return err
}

// encode frames resp for req: size, correlation id, header tags when the
// response is flexible (never for ApiVersions), body.
func encode(req *request, resp kmsg.Response) encoded {
	resp.SetVersion(req.GetVersion())
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(req.correlationID))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return encoded(buf)
}
