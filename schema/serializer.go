package schema

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/linkedin/goavro/v2"
	"github.com/tributary-io/tributary/schema/internal/avsc"
	"github.com/twmb/franz-go/pkg/sr"
)

// SerializerConfig configures a Serializer.
type SerializerConfig struct {
	// Schema is the writer schema in Avro JSON. Required.
	Schema string
	// Service is written to header.service when the application leaves it
	// empty (schemas with the standard header only).
	Service string
	// Server is written to header.server when the application leaves it
	// empty. Default: os.Hostname().
	Server string
	// Subject names the subject for a topic. Default: TopicNameStrategy.
	Subject func(topic string) string
	// LookupOnly makes the serializer only look the schema up, never
	// register it — for producers that must not change the registry
	// (Confluent's auto.register.schemas=false).
	LookupOnly bool
	// Now is the clock for header.time. Default: time.Now.
	Now func() time.Time
	// HeaderField is the top-level field holding the header (see
	// HeaderLayout). Default: DefaultHeaderField.
	HeaderField string
}

// Serializer encodes values under one writer schema into envelopes. It is
// safe for concurrent use.
type Serializer struct {
	ids     idCache
	subject func(string) string
	codec   *goavro.Codec // maps, in goavro's native form
	hschema avro.Schema   // structs
	api     avro.API
	header  *headerFiller // nil when the schema has no header to fill
	hfield  string
}

// NewSerializer parses cfg.Schema and returns a Serializer that registers it
// (or looks it up) through reg on first use of each subject.
func NewSerializer(reg Registry, cfg SerializerConfig) (*Serializer, error) {
	if reg == nil {
		return nil, errors.New("schema: NewSerializer needs a registry client")
	}
	p, err := avsc.Parse(cfg.Schema)
	if err != nil {
		return nil, fmt.Errorf("schema: writer schema: %w", err)
	}
	s := &Serializer{
		ids:     idCache{reg: reg, schema: sr.Schema{Schema: cfg.Schema, Type: sr.TypeAvro}, lookup: cfg.LookupOnly, ids: map[string]int{}},
		subject: cfg.Subject,
		codec:   p.Codec,
		hschema: p.Avro,
		api:     avro.Config{}.Freeze(),
	}
	if s.subject == nil {
		s.subject = TopicNameStrategy
	}
	s.hfield = cfg.HeaderField
	if s.hfield == "" {
		s.hfield = DefaultHeaderField
	}
	if f := newHeaderFiller(p.Avro, s.hfield); f != nil {
		f.server, f.service, f.now = cfg.Server, cfg.Service, cfg.Now
		if f.server == "" {
			f.server, _ = os.Hostname()
		}
		if f.now == nil {
			f.now = time.Now
		}
		s.header = f
	}
	return s, nil
}

// Serialize encodes v for topic. v is a map[string]any in goavro's native
// form (unions as nil or map[string]any{"type": value}, fixed as []byte,
// timestamp-millis as time.Time or int64 ms) or a struct / *struct with
// hamba/avro `avro` tags. A standard header left empty or zero is filled
// in; v itself is never modified.
func (s *Serializer) Serialize(ctx context.Context, topic string, v any) ([]byte, error) {
	return s.AppendSerialize(ctx, nil, topic, v)
}

// AppendSerialize is Serialize appending to dst, so a caller can reuse a
// buffer.
func (s *Serializer) AppendSerialize(ctx context.Context, dst []byte, topic string, v any) ([]byte, error) {
	subject := s.subject(topic)
	id, err := s.ID(ctx, subject)
	if err != nil {
		return nil, err
	}
	out := AppendEnvelope(dst, id)
	if isStruct(v) {
		if s.header != nil {
			v = s.header.fillStruct(v)
		}
		body, err := s.api.Marshal(s.hschema, v)
		if err != nil {
			return nil, fmt.Errorf("schema: encode %T for subject %q: %w", v, subject, err)
		}
		return append(out, body...), nil
	}
	if m, ok := v.(map[string]any); ok && s.header != nil {
		v = s.header.fillMap(m)
	}
	out, err = s.codec.BinaryFromNative(out, v)
	if err != nil {
		return nil, fmt.Errorf("schema: encode %T for subject %q: %w", v, subject, err)
	}
	return out, nil
}

// HeaderField is the top-level field this serializer takes for the
// header: the field it fills, and the one the audit must read.
func (s *Serializer) HeaderField() string { return s.hfield }

// ID returns the schema id for subject, asking the registry only the first
// time.
func (s *Serializer) ID(ctx context.Context, subject string) (int, error) {
	return s.ids.id(ctx, subject)
}

// idCache registers one schema (or looks it up) under each subject it is
// asked for, once.
type idCache struct {
	reg    Registry
	schema sr.Schema
	lookup bool

	mu  sync.RWMutex
	ids map[string]int // subject → id, filled on first use
}

func (c *idCache) id(ctx context.Context, subject string) (int, error) {
	c.mu.RLock()
	id, ok := c.ids[subject]
	c.mu.RUnlock()
	if ok {
		return id, nil
	}
	if c.lookup {
		ss, err := c.reg.LookupSchema(ctx, subject, c.schema)
		if err != nil {
			return 0, fmt.Errorf("schema: look up writer schema under subject %q (this serializer is lookup-only: register the schema first): %w", subject, err)
		}
		id = ss.ID
	} else {
		var err error
		if id, err = c.reg.RegisterSchema(ctx, subject, c.schema, -1, -1); err != nil {
			return 0, fmt.Errorf("schema: register writer schema under subject %q: %w", subject, err)
		}
	}
	c.mu.Lock()
	c.ids[subject] = id
	c.mu.Unlock()
	return id, nil
}

func isStruct(v any) bool {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && t.Kind() == reflect.Struct
}
