package broker

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
	// An API we do not serve is refused like a version we do not serve.
	if vr, ok := supported[key]; !ok || version < vr.min || version > vr.max {
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
	if key == 3 { // Metadata
		if err := checkMetadataTopics(version, rest); err != nil {
			return nil, err
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
