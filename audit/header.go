package audit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/tributary-io/tributary/schema"
)

// ErrNoTime means an event has no usable header time: its schema has no
// standard header, or the time is zero. Such events are counted apart
// (no_time), never in a window.
var ErrNoTime = errors.New("audit: event has no header time")

// IsMalformed reports whether err from HeaderReader.Read means the value
// itself is bad (not an envelope, an unknown schema id, a body that does
// not decode), as opposed to a failure to reach the registry, which says
// nothing about the value and must not be counted.
func IsMalformed(err error) bool {
	return errors.Is(err, schema.ErrWrongMagic) || errors.Is(err, schema.ErrTruncated) ||
		errors.Is(err, schema.ErrUnknownID) || errors.Is(err, schema.ErrBadBody) || errors.Is(err, errBadHeader)
}

var errBadHeader = errors.New("audit: header does not decode")

// HeaderReader reads the header time and server of envelopes. It is safe
// for concurrent use.
type HeaderReader struct {
	des    *schema.Deserializer
	strict bool

	mu    sync.RWMutex
	plans map[int]plan // schema id → how to find the header
}

// plan is what a writer schema says about reading its header.
type plan int

const (
	planNoHeader plan = iota // no standard header: no_time
	planLeading              // header first, time then server first in it: read them directly
	planDecode               // anywhere else: decode the whole value
)

// NewHeaderReader returns a HeaderReader that fetches writer schemas
// through reg. A strict reader decodes every value completely, so a body
// that is broken after its header counts as malformed (tiers want this);
// otherwise a header at the front of the value is read without decoding
// the rest (a producer that just encoded the value wants this).
func NewHeaderReader(reg schema.Registry, strict bool) (*HeaderReader, error) {
	des, err := schema.NewDeserializer(reg, schema.DeserializerConfig{})
	if err != nil {
		return nil, err
	}
	return &HeaderReader{des: des, strict: strict, plans: map[int]plan{}}, nil
}

// Read returns the header time and server of an envelope. The error is
// ErrNoTime for an event without a usable time, IsMalformed for a value
// that does not decode, anything else for a registry failure.
func (h *HeaderReader) Read(ctx context.Context, value []byte) (time.Time, string, error) {
	id, body, err := schema.DecodeEnvelope(value)
	if err != nil {
		return time.Time{}, "", err
	}
	pl, err := h.plan(ctx, id)
	if err != nil {
		return time.Time{}, "", err
	}
	if pl == planLeading && !h.strict {
		return readLeading(body)
	}
	if pl == planNoHeader && !h.strict {
		return time.Time{}, "", ErrNoTime
	}
	native, err := h.des.Deserialize(ctx, value)
	if err != nil {
		return time.Time{}, "", err
	}
	ms, ok := schema.HeaderTime(native)
	if !ok {
		return time.Time{}, "", ErrNoTime
	}
	var server string
	if m, ok := native.(map[string]any); ok {
		if hd, ok := m["header"].(map[string]any); ok {
			server, _ = hd["server"].(string)
		}
	}
	return time.UnixMilli(ms).UTC(), server, nil
}

func (h *HeaderReader) plan(ctx context.Context, id int) (plan, error) {
	h.mu.RLock()
	pl, ok := h.plans[id]
	h.mu.RUnlock()
	if ok {
		return pl, nil
	}
	text, err := h.des.WriterSchema(ctx, id)
	if err != nil {
		return 0, err
	}
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return 0, fmt.Errorf("audit: writer schema %d: %w", id, err)
	}
	pl = planFor(s)
	h.mu.Lock()
	h.plans[id] = pl
	h.mu.Unlock()
	return pl, nil
}

func planFor(s avro.Schema) plan {
	rec, ok := s.(*avro.RecordSchema)
	if !ok {
		return planNoHeader
	}
	for i, f := range rec.Fields() {
		if f.Name() != "header" {
			continue
		}
		t := f.Type()
		if ref, ok := t.(*avro.RefSchema); ok {
			t = ref.Schema()
		}
		hr, ok := t.(*avro.RecordSchema)
		if !ok || hr.FullName() != schema.HeaderSchemaName {
			return planNoHeader
		}
		hf := hr.Fields()
		if i == 0 && len(hf) >= 2 && hf[0].Name() == "time" && hf[0].Type().Type() == avro.Long &&
			hf[1].Name() == "server" && hf[1].Type().Type() == avro.String {
			return planLeading
		}
		return planDecode
	}
	return planNoHeader
}

// readLeading reads header.time (a zig-zag varint long) and header.server
// (a length-prefixed string) from the front of an Avro body.
func readLeading(body []byte) (time.Time, string, error) {
	ms, n := binary.Varint(body)
	if n <= 0 {
		return time.Time{}, "", fmt.Errorf("%w: header.time", errBadHeader)
	}
	body = body[n:]
	l, m := binary.Varint(body)
	if m <= 0 || l < 0 || int64(len(body)-m) < l {
		return time.Time{}, "", fmt.Errorf("%w: header.server", errBadHeader)
	}
	if ms == 0 {
		return time.Time{}, "", ErrNoTime
	}
	return time.UnixMilli(ms).UTC(), string(body[m : m+int(l)]), nil
}
