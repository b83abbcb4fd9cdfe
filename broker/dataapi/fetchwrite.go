package dataapi

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tributary-io/tributary/broker/kafkaapi"
)

// fetchResponse is a Fetch response laid out for zero-copy writing: every
// byte that is not a record is encoded in memory, and the records stay in
// their segment files until sendfile moves them to the socket. kmsg's encoder
// would copy the records inline, so this file writes the Fetch wire format
// itself; TestFetchEncodingMatchesKmsg checks it against kmsg's decoder.
type fetchResponse struct {
	pieces []fetchPiece
	size   int64 // frame size, excluding the 4-byte size prefix
	topics []fetchTopic
}

// fetchPiece is encoded bytes followed by a record range (possibly empty).
type fetchPiece struct {
	head    []byte
	records *fetchPartition
}

// CopyStats counts the bytes fetch responses wrote through user space and
// with sendfile, so tests and operators can see that record bytes are not
// copied. Read them with FetchCopyStats.
var fetchUserBytes, fetchSendfileBytes atomic.Int64

// FetchCopyStats reports the bytes written by fetch responses so far: the
// encoded header bytes that went through user space, and the record bytes
// sent with sendfile.
func FetchCopyStats() (userBytes, sendfileBytes int64) {
	return fetchUserBytes.Load(), fetchSendfileBytes.Load()
}

func newFetchResponse(req *kafkaapi.Request, topics []fetchTopic) *fetchResponse {
	v := req.GetVersion()
	flex := v >= 12
	e := &fetchEncoder{flex: flex}
	e.buf = make([]byte, 0, 256)
	e.int32(0) // frame size, filled in below
	e.int32(req.CorrelationID)
	if flex {
		e.buf = append(e.buf, 0) // response header tags
	}
	e.int32(0) // ThrottleMillis
	if v >= 7 {
		e.int16(0) // ErrorCode
		e.int32(0) // SessionID: no session
	}
	e.arrayLen(len(topics))
	resp := &fetchResponse{topics: topics}
	for ti := range topics {
		t := &topics[ti]
		e.string(t.name)
		e.arrayLen(len(t.partitions))
		for pi := range t.partitions {
			p := &t.partitions[pi]
			e.int32(p.partition)
			e.int16(p.errorCode)
			e.int64(p.highWatermark)
			e.int64(p.stableOffset())
			if v >= 5 {
				e.int64(p.logStart)
			}
			e.abortedTxns(p.aborted) // fetch_txn.go
			if v >= 11 {
				e.int32(-1) // PreferredReadReplica
			}
			e.bytesLen(p.records.Size)
			resp.pieces = append(resp.pieces, fetchPiece{head: e.buf, records: p})
			e.buf = make([]byte, 0, 64)
			if flex {
				e.buf = append(e.buf, 0) // partition tags
			}
		}
		if flex {
			e.buf = append(e.buf, 0) // topic tags
		}
	}
	if flex {
		e.buf = append(e.buf, 0) // response tags
	}
	resp.pieces = append(resp.pieces, fetchPiece{head: e.buf})
	for _, p := range resp.pieces {
		resp.size += int64(len(p.head))
		if p.records != nil {
			resp.size += p.records.records.Size
		}
	}
	resp.size -= 4
	binary.BigEndian.PutUint32(resp.pieces[0].head, uint32(resp.size))
	return resp
}

// Release lets go of the segment files of a response that will not be
// written (its connection was dropped); idempotent.
func (f *fetchResponse) Release() { releaseFetch(f.topics) }

// Send writes the encoded pieces with writev and the record ranges with
// sendfile, in order, then releases the segment files.
func (f *fetchResponse) Send(nc net.Conn) error {
	defer releaseFetch(f.topics)
	if tc, ok := nc.(*tls.Conn); ok {
		return f.writeCopy(tc)
	}
	var raw syscall.RawConn
	if sc, ok := nc.(syscall.Conn); ok {
		raw, _ = sc.SyscallConn()
	}
	var pending net.Buffers
	var user int64
	for _, p := range f.pieces {
		pending = append(pending, p.head)
		user += int64(len(p.head))
		if p.records == nil || p.records.records.Size == 0 {
			continue
		}
		if _, err := pending.WriteTo(nc); err != nil {
			return err
		}
		pending = nil
		s := &p.records.records
		if raw != nil {
			if err := sendfile(raw, s.File.Fd(), s.Pos, s.Size); err != nil {
				return err
			}
			fetchSendfileBytes.Add(s.Size)
		} else {
			// Not a socket (a TLS or test connection): copy.
			if _, err := io.Copy(nc, io.NewSectionReader(s.File, s.Pos, s.Size)); err != nil {
				return err
			}
			user += s.Size
		}
	}
	if _, err := pending.WriteTo(nc); err != nil {
		return err
	}
	fetchUserBytes.Add(user)
	return nil
}

// writeCopy writes the response through a TLS connection, which must
// encrypt every byte in user space, so sendfile cannot serve it: record
// ranges are read from their segments into a buffer and written through
// tc. Encoded pieces share the buffer with the records that follow them,
// so small heads do not become TLS records of their own.
func (f *fetchResponse) writeCopy(tc *tls.Conn) error {
	bp := tlsCopyBuffers.Get().(*[]byte)
	defer tlsCopyBuffers.Put(bp)
	buf := (*bp)[:0]
	var written int64
	flush := func() error {
		_, err := tc.Write(buf)
		written += int64(len(buf))
		buf = buf[:0]
		return err
	}
	for _, p := range f.pieces {
		if len(buf)+len(p.head) > cap(buf) {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(p.head) > cap(buf) {
			if _, err := tc.Write(p.head); err != nil {
				return err
			}
			written += int64(len(p.head))
		} else {
			buf = append(buf, p.head...)
		}
		if p.records == nil {
			continue
		}
		s := &p.records.records
		for pos, end := s.Pos, s.Pos+s.Size; pos < end; {
			if len(buf) == cap(buf) {
				if err := flush(); err != nil {
					return err
				}
			}
			n := int(min(int64(cap(buf)-len(buf)), end-pos))
			m, err := s.File.ReadAt(buf[len(buf):len(buf)+n], pos)
			buf = buf[:len(buf)+m]
			pos += int64(m)
			if err != nil && m < n {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF // the file is shorter than the index said
				}
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	fetchUserBytes.Add(written)
	return nil
}

// tlsCopyBuffers are the buffers of writeCopy: a few TLS records' worth,
// reused so that a busy TLS listener does not allocate per response.
var tlsCopyBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 256<<10)
	return &b
}}

// sendfile moves size bytes at pos of file fd to the socket. The explicit
// offset keeps concurrent fetches of one segment from sharing (and fighting
// over) the file's position. On a full socket buffer it returns false to the
// runtime poller, which calls again when the socket is writable.
func sendfile(raw syscall.RawConn, fd uintptr, pos, size int64) error {
	var werr error
	err := raw.Write(func(sock uintptr) bool {
		for size > 0 {
			n, err := unix.Sendfile(int(sock), int(fd), &pos, int(min(size, 1<<30)))
			if n > 0 {
				size -= int64(n)
			}
			switch {
			case err == unix.EAGAIN:
				return false
			case err == unix.EINTR:
				continue
			case err != nil:
				werr = err
				return true
			case n == 0:
				werr = io.ErrUnexpectedEOF // the file is shorter than the index said
				return true
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return werr
}

// fetchEncoder appends Kafka primitives, compact (flexible) or classic.
type fetchEncoder struct {
	buf  []byte
	flex bool
}

func (e *fetchEncoder) int16(v int16) { e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(v)) }
func (e *fetchEncoder) int32(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }
func (e *fetchEncoder) int64(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

func (e *fetchEncoder) string(s string) {
	if e.flex {
		e.buf = binary.AppendUvarint(e.buf, uint64(len(s))+1)
	} else {
		e.int16(int16(len(s)))
	}
	e.buf = append(e.buf, s...)
}

func (e *fetchEncoder) arrayLen(n int) {
	if e.flex {
		e.buf = binary.AppendUvarint(e.buf, uint64(n)+1)
	} else {
		e.int32(int32(n))
	}
}

func (e *fetchEncoder) nullArray() {
	if e.flex {
		e.buf = append(e.buf, 0)
	} else {
		e.int32(-1)
	}
}

func (e *fetchEncoder) bytesLen(n int64) {
	if e.flex {
		e.buf = binary.AppendUvarint(e.buf, uint64(n)+1)
	} else {
		e.int32(int32(n))
	}
}
