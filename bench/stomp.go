package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// stompConn is the least of a STOMP 1.2 client that the ActiveMQ tests
// need: frames out (buffered, flushed by the caller so that a batch is one
// write) and frames in. No STOMP client module is served here, and the
// protocol is small enough that this is clearer than a dependency.
type stompConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

type stompFrame struct {
	command string
	headers map[string]string
	body    []byte
}

func dialSTOMP(addr string) (*stompConn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	s := &stompConn{c: c, r: bufio.NewReaderSize(c, 256<<10), w: bufio.NewWriterSize(c, 64<<10)}
	s.writeFrame("CONNECT", nil, "accept-version:1.2", "host:localhost", "heart-beat:0,0")
	if err := s.w.Flush(); err != nil {
		c.Close()
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := s.readFrame()
	c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("stomp connect: %w", err)
	}
	if f.command != "CONNECTED" {
		c.Close()
		return nil, fmt.Errorf("stomp connect: got %s: %s %s", f.command, f.headers["message"], f.body)
	}
	return s, nil
}

func (s *stompConn) Close() error {
	s.writeFrame("DISCONNECT", nil)
	s.w.Flush()
	return s.c.Close()
}

// writeFrame buffers one frame; headers are "name:value". A body gets a
// content-length header, so it may hold any bytes.
func (s *stompConn) writeFrame(command string, body []byte, headers ...string) {
	s.w.WriteString(command)
	s.w.WriteByte('\n')
	for _, h := range headers {
		s.w.WriteString(h)
		s.w.WriteByte('\n')
	}
	if body != nil {
		s.w.WriteString("content-length:")
		s.w.WriteString(strconv.Itoa(len(body)))
		s.w.WriteByte('\n')
	}
	s.w.WriteByte('\n')
	s.w.Write(body)
	s.w.WriteByte(0)
}

// readFrame reads the next frame, skipping heart-beat newlines.
func (s *stompConn) readFrame() (stompFrame, error) {
	var f stompFrame
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return f, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line != "" {
			f.command = line
			break
		}
	}
	f.headers = map[string]string{}
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return f, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		k, v, _ := strings.Cut(line, ":")
		if _, dup := f.headers[k]; !dup { // STOMP: the first occurrence wins
			f.headers[k] = v
		}
	}
	if cl, ok := f.headers["content-length"]; ok {
		n, err := strconv.Atoi(cl)
		if err != nil || n < 0 || n > 64<<20 {
			return f, fmt.Errorf("stomp: bad content-length %q", cl)
		}
		f.body = make([]byte, n)
		if _, err := io.ReadFull(s.r, f.body); err != nil {
			return f, err
		}
		if b, err := s.r.ReadByte(); err != nil || b != 0 {
			return f, errors.New("stomp: frame body not followed by NUL")
		}
	} else {
		body, err := s.r.ReadBytes(0)
		if err != nil {
			return f, err
		}
		f.body = bytes.TrimSuffix(body, []byte{0})
	}
	if f.command == "ERROR" {
		return f, fmt.Errorf("stomp error: %s %s", f.headers["message"], bytes.TrimSpace(f.body))
	}
	return f, nil
}

// waitReceipt reads frames until the RECEIPT with id.
func (s *stompConn) waitReceipt(id string) error {
	for {
		f, err := s.readFrame()
		if err != nil {
			return err
		}
		if f.command == "RECEIPT" && f.headers["receipt-id"] == id {
			return nil
		}
	}
}
