package netserver

// Request and response frames: decoding a request's header and body, and
// framing a response for the wire. Sizes are checked by the read loop
// before a frame gets here (conn.go).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// APIVersionsKey is ApiVersions' key: its probe at an unserved version is
// answered, and its response header never has tagged fields.
const APIVersionsKey = 18

// UnsupportedVersion is DecodeRequest's error for a key or version not
// served.
type UnsupportedVersion struct {
	Key, Version  int16
	CorrelationID int32
}

func (e *UnsupportedVersion) Error() string {
	return fmt.Sprintf("api key %d version %d is not supported", e.Key, e.Version)
}

func (s *Server) decodeRequest(frame []byte) (Request, error) {
	return DecodeRequest(frame, s.cfg.Supports, s.cfg.CheckBody)
}

// DecodeRequest parses a request header and body (the frame after its
// size) when supports serves its key and version, after check (nil: none)
// has seen the body. The header is v1 (key, version, correlation id,
// nullable client id) or, for flexible versions, v2 (the same followed by
// tagged fields).
func DecodeRequest(frame []byte, supports func(key, version int16) bool, check func(key, version int16, body []byte) error) (Request, error) {
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corr := int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]
	if len(rest) < 2 {
		return Request{}, errors.New("request header cut short")
	}
	idLen := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	var clientID string
	if idLen > 0 {
		if int(idLen) > len(rest) {
			return Request{}, errors.New("client id longer than the request")
		}
		clientID = string(rest[:idLen])
		rest = rest[idLen:]
	}
	// An API we do not serve is refused like a version we do not serve.
	if !supports(key, version) {
		return Request{}, &UnsupportedVersion{Key: key, Version: version, CorrelationID: corr}
	}
	kreq := kmsg.RequestForKey(key)
	kreq.SetVersion(version)
	if kreq.IsFlexible() {
		var err error
		if rest, err = SkipTags(rest); err != nil {
			return Request{}, fmt.Errorf("request header tags: %w", err)
		}
	}
	if check != nil {
		if err := check(key, version, rest); err != nil {
			return Request{}, err
		}
	}
	if err := kreq.ReadFrom(rest); err != nil {
		return Request{}, fmt.Errorf("decoding %s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	return Request{Request: kreq, CorrelationID: corr, ClientID: clientID}, nil
}

// SkipTags skips a tagged-fields section: a count, then (tag, size, bytes).
func SkipTags(b []byte) ([]byte, error) {
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

// Encoded is a kmsg response framed for the wire.
type Encoded []byte

// Send writes the frame.
func (e Encoded) Send(nc net.Conn) error {
	_, err := nc.Write(e)
	return err
}

// Encode frames resp at version for the request of correlationID: size,
// correlation id, header tags when the response is flexible (never for
// ApiVersions), body.
func Encode(correlationID int32, version int16, resp kmsg.Response) Encoded {
	resp.SetVersion(version)
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != APIVersionsKey {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return Encoded(buf)
}
