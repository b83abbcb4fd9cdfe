package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tributary-io/tributary/schema"
)

// ErrNoTime means an event has no usable header time (see
// schema.HeaderLayout for the rule): its schema has no header, or this
// event's time is zero or null. Such events are counted apart (no_time),
// never in a window. The error says why.
var ErrNoTime = schema.ErrNoHeaderTime

// IsMalformed reports whether err from HeaderReader.Read means the value
// itself is bad (not an envelope, an unknown schema id, a body that does
// not decode), as opposed to a failure to reach the registry, which says
// nothing about the value and must not be counted.
func IsMalformed(err error) bool {
	return errors.Is(err, schema.ErrWrongMagic) || errors.Is(err, schema.ErrTruncated) ||
		errors.Is(err, schema.ErrUnknownID) || errors.Is(err, schema.ErrBadBody) ||
		errors.Is(err, schema.ErrUnsupportedSchema) // a schema without an Avro form: its events are unreadable here
}

// HeaderReaderConfig configures a HeaderReader.
type HeaderReaderConfig struct {
	// Strict readers check every value completely (schema.HeaderLayout's
	// Check), so a body that is broken after its header counts as
	// malformed (tiers want this);
	// otherwise only the fields up to the header's are read (a producer
	// that just encoded the value wants this).
	Strict bool
	// HeaderField is the top-level field holding the header. Default:
	// schema.DefaultHeaderField.
	HeaderField string
}

// HeaderReader reads the header time and server of envelopes by the rule
// of schema.HeaderLayout, which every tier shares. It is safe for
// concurrent use.
type HeaderReader struct {
	strict  bool
	layouts *schema.HeaderLayouts
}

// NewHeaderReader returns a HeaderReader that fetches writer schemas
// through reg.
func NewHeaderReader(reg schema.Registry, cfg HeaderReaderConfig) (*HeaderReader, error) {
	des, err := schema.NewDeserializer(reg, schema.DeserializerConfig{})
	if err != nil {
		return nil, err
	}
	return &HeaderReader{strict: cfg.Strict, layouts: schema.NewHeaderLayouts(des, cfg.HeaderField)}, nil
}

// Read returns the header time and server of an envelope. The error wraps
// ErrNoTime for an event without a usable time, IsMalformed for a value
// that does not decode, anything else for a registry failure.
func (h *HeaderReader) Read(ctx context.Context, value []byte) (time.Time, string, error) {
	id, body, err := schema.DecodeEnvelope(value)
	if err != nil {
		return time.Time{}, "", err
	}
	// A Protobuf or JSON Schema record is read in the Avro schema derived
	// from its own, converted whole (and so checked whole, strict or not).
	l, w, body, err := h.layouts.Body(ctx, id, body)
	if err != nil {
		return time.Time{}, "", err
	}
	if h.strict && !l.Derived() {
		// Walked by its encodings, not decoded: the same acceptance as a
		// decoder's (and the loader's, which files exactly the bodies that
		// pass), without building the value.
		if err := l.Check(body); err != nil {
			return time.Time{}, "", fmt.Errorf("%s: %w", w, err)
		}
	}
	ms, server, err := l.Read(body)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("%s: %w", w, err)
	}
	return time.UnixMilli(ms).UTC(), server, nil
}
