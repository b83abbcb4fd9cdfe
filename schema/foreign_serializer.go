package schema

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tributary-io/tributary/schema/internal/jsschema"
	"github.com/tributary-io/tributary/schema/internal/pbschema"
	"github.com/tributary-io/tributary/schema/internal/transcode"
)

// ErrBadEvent marks a JSON event that a ForeignSerializer refuses: it
// does not parse as the Protobuf message, or does not validate against
// the JSON schema. The error says where.
var ErrBadEvent = errors.New("not a valid event")

// ForeignSerializerConfig configures a ForeignSerializer.
type ForeignSerializerConfig struct {
	// Type is sr.TypeProtobuf or sr.TypeJSON. Required.
	Type sr.SchemaType
	// Schema is the writer schema: .proto text, or a JSON schema. A
	// .proto may import the well-known types and References, a JSON
	// schema "$ref" References; anything else is refused.
	Schema string
	// References are the files Schema imports (Protobuf: by import path)
	// or "$ref"s (JSON: by the name the "$ref" uses), of the same type.
	// Each is registered under a subject of its name, as Confluent's
	// serializers do by default, before Schema is registered with
	// references to them. A referenced file may itself import only the
	// well-known types.
	References []Reference
	// Message is the full name of the Protobuf message events are
	// (default: the root message, as the loader's tables take it).
	Message string
	// Service, Server and HeaderField are as in SerializerConfig.
	Service, Server, HeaderField string
	// Now is the clock for header.time. Default: time.Now.
	Now func() time.Time
}

// Reference is a file a schema imports: its name and its text.
type Reference struct {
	Name, Schema string
}

// ForeignSerializer writes JSON events as Protobuf or JSON Schema records
// in Confluent's envelopes: the magic byte and schema id, then for
// Protobuf the message indexes and the message's bytes, for JSON the
// JSON text. Like Serializer, it registers its schema under each topic's
// subject on first use and fills the header fields an event leaves
// empty (time, server, service, guid: those the header has). It is safe
// for concurrent use.
type ForeignSerializer struct {
	ids     idCache
	typ     sr.SchemaType
	md      protoreflect.MessageDescriptor // PROTOBUF
	indexes []byte                         // PROTOBUF: md's message indexes, encoded
	valid   *jsonschema.Schema             // JSON
	header  map[string]bool                // JSON: the header's declared properties
	cfg     ForeignSerializerConfig
	// readable converts a record's body as every reader of it will
	// (Deserializer.AvroBody); nil when the schema has no Avro form.
	readable func(body []byte, v any) error

	refsMu sync.Mutex
	refsOK bool // References registered, ids.schema.References set
}

// NewForeignSerializer compiles cfg.Schema as the registry and every
// reader of its records will.
func NewForeignSerializer(reg Registry, cfg ForeignSerializerConfig) (*ForeignSerializer, error) {
	if reg == nil {
		return nil, errors.New("schema: NewForeignSerializer needs a registry client")
	}
	if cfg.HeaderField == "" {
		cfg.HeaderField = DefaultHeaderField
	}
	if cfg.Server == "" {
		cfg.Server, _ = os.Hostname()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &ForeignSerializer{typ: cfg.Type, cfg: cfg,
		ids: idCache{reg: reg, schema: sr.Schema{Schema: cfg.Schema, Type: cfg.Type}, ids: map[string]int{}}}
	switch cfg.Type {
	case sr.TypeProtobuf:
		deps := make(map[string]string, len(cfg.References))
		for _, r := range cfg.References {
			if _, err := pbschema.Compile(r.Schema, nil); err != nil {
				return nil, fmt.Errorf("reference %s does not compile on its own (it may import only the well-known types): %w", r.Name, err)
			}
			deps[r.Name] = r.Schema
		}
		fd, err := pbschema.Compile(cfg.Schema, deps)
		if err != nil {
			return nil, fmt.Errorf("does not compile: %w", err)
		}
		if fd.Messages().Len() == 0 {
			return nil, errors.New("defines no message")
		}
		s.md = rootMessage(fd)
		if cfg.Message != "" {
			if s.md = findMessage(fd.Messages(), protoreflect.FullName(cfg.Message)); s.md == nil {
				return nil, fmt.Errorf("defines no message %s (full names, with the package: %s)", cfg.Message, messageNames(fd.Messages()))
			}
		}
		s.indexes = messageIndexes(s.md)
		if tp, err := transcode.NewProto(s.md); err == nil {
			s.readable = func(body []byte, _ any) error { _, err := tp.Decode(nil, body); return err }
		}
	case sr.TypeJSON:
		if cfg.Message != "" {
			return nil, errors.New("a JSON schema has no messages to pick from")
		}
		order := transcode.KeyOrder{}
		doc, err := transcode.DecodeSchema(cfg.Schema, order)
		if err != nil {
			return nil, fmt.Errorf("is not JSON: %w", err)
		}
		refs := make([]jsschema.Ref, len(cfg.References))
		for i, r := range cfg.References {
			d, err := transcode.DecodeSchema(r.Schema, order)
			if err != nil {
				return nil, fmt.Errorf("reference %s is not JSON: %w", r.Name, err)
			}
			if _, err := jsschema.Compile(d, nil); err != nil {
				return nil, fmt.Errorf("reference %s does not compile on its own (it may not \"$ref\" other files): %w", r.Name, err)
			}
			refs[i] = jsschema.Ref{Name: r.Name, Doc: d}
		}
		if s.valid, err = jsschema.Compile(doc, refs); err != nil {
			return nil, fmt.Errorf("does not compile: %w", err)
		}
		s.header = declaredHeader(doc, cfg.HeaderField)
		if tj, err := transcode.NewJSON(doc, refs, order); err == nil {
			s.readable = func(_ []byte, v any) error { _, err := tj.Encode(nil, v); return err }
		}
	default:
		return nil, fmt.Errorf("schema type %q: PROTOBUF or JSON", cfg.Type)
	}
	return s, nil
}

// Message is the full name of the Protobuf message events are ("" for
// JSON).
func (s *ForeignSerializer) Message() string {
	if s.md == nil {
		return ""
	}
	return string(s.md.FullName())
}

// HeaderField is the top-level field this serializer fills.
func (s *ForeignSerializer) HeaderField() string { return s.cfg.HeaderField }

// Serialize returns the envelope of one JSON event for topic. An event
// that does not parse or validate is ErrBadEvent, with the reason.
func (s *ForeignSerializer) Serialize(ctx context.Context, topic string, event []byte) ([]byte, error) {
	var body []byte
	var err error
	if s.typ == sr.TypeProtobuf {
		body, err = s.protoBody(event)
	} else {
		body, err = s.jsonBody(event)
	}
	if err != nil {
		return nil, err
	}
	if err := s.registerReferences(ctx); err != nil {
		return nil, err
	}
	id, err := s.ids.id(ctx, TopicNameStrategy(topic))
	if err != nil {
		return nil, err
	}
	out := AppendEnvelope(make([]byte, 0, 5+len(s.indexes)+len(body)), id)
	out = append(out, s.indexes...)
	return append(out, body...), nil
}

// registerReferences registers each referenced file under its name, once,
// and makes the schema refer to the versions registered.
func (s *ForeignSerializer) registerReferences(ctx context.Context) error {
	s.refsMu.Lock()
	defer s.refsMu.Unlock()
	if s.refsOK || len(s.cfg.References) == 0 {
		return nil
	}
	refs := make([]sr.SchemaReference, 0, len(s.cfg.References))
	for _, r := range s.cfg.References {
		sch := sr.Schema{Schema: r.Schema, Type: s.typ}
		if _, err := s.ids.reg.RegisterSchema(ctx, r.Name, sch, -1, -1); err != nil {
			return fmt.Errorf("schema: register reference %s under subject %q: %w", r.Name, r.Name, err)
		}
		ss, err := s.ids.reg.LookupSchema(ctx, r.Name, sch)
		if err != nil {
			return fmt.Errorf("schema: look up reference %s under subject %q: %w", r.Name, r.Name, err)
		}
		refs = append(refs, sr.SchemaReference{Name: r.Name, Subject: r.Name, Version: ss.Version})
	}
	// Every id lookup comes after this, ordered by refsMu.
	s.ids.schema.References = refs
	s.refsOK = true
	return nil
}

func (s *ForeignSerializer) protoBody(event []byte) ([]byte, error) {
	m := dynamicpb.NewMessage(s.md)
	if err := protojson.Unmarshal(event, m); err != nil {
		return nil, fmt.Errorf("%w: as %s: %v", ErrBadEvent, s.md.FullName(), err)
	}
	if fd := s.md.Fields().ByName(protoreflect.Name(s.cfg.HeaderField)); fd != nil && fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
		s.fillProtoHeader(m.Mutable(fd).Message())
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: as %s: %v", ErrBadEvent, s.md.FullName(), err)
	}
	if err := s.checkReadable(b, nil); err != nil {
		return nil, err
	}
	return b, nil
}

// checkReadable refuses an event that its schema allows but that
// Tributary's readers cannot convert (a JSON integer or a uint64 past a
// long): sent, it would be a malformed record in every tier and the
// loader's _errors, so it is refused here, where the sender sees why.
func (s *ForeignSerializer) checkReadable(body []byte, v any) error {
	if s.readable == nil {
		return nil
	}
	if err := s.readable(body, v); err != nil {
		return fmt.Errorf("%w: valid, but Tributary's readers could not convert it: %v", ErrBadEvent, err)
	}
	return nil
}

// fillProtoHeader sets the header fields left at their zero value: time
// (a 64-bit integer, in milliseconds as the header rule reads it, or a
// google.protobuf.Timestamp), server and service (strings) and guid
// (bytes).
func (s *ForeignSerializer) fillProtoHeader(h protoreflect.Message) {
	fields := h.Descriptor().Fields()
	if fd := fields.ByName("time"); fd != nil && !fd.IsList() && !fd.IsMap() && !h.Has(fd) {
		now := s.cfg.Now()
		switch fd.Kind() {
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			h.Set(fd, protoreflect.ValueOfInt64(now.UnixMilli()))
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			h.Set(fd, protoreflect.ValueOfUint64(uint64(now.UnixMilli())))
		case protoreflect.MessageKind:
			if fd.Message().FullName() == "google.protobuf.Timestamp" {
				ts := h.Mutable(fd).Message()
				tf := ts.Descriptor().Fields()
				ts.Set(tf.ByName("seconds"), protoreflect.ValueOfInt64(now.Unix()))
				ts.Set(tf.ByName("nanos"), protoreflect.ValueOfInt32(int32(now.Nanosecond())))
			}
		}
	}
	for name, v := range map[protoreflect.Name]string{"server": s.cfg.Server, "service": s.cfg.Service} {
		if fd := fields.ByName(name); fd != nil && fd.Kind() == protoreflect.StringKind && !fd.IsList() && !fd.IsMap() && h.Get(fd).String() == "" {
			h.Set(fd, protoreflect.ValueOfString(v))
		}
	}
	if fd := fields.ByName("guid"); fd != nil && fd.Kind() == protoreflect.BytesKind && !fd.IsList() && !fd.IsMap() && len(h.Get(fd).Bytes()) == 0 {
		g := newGUID()
		h.Set(fd, protoreflect.ValueOfBytes(g[:]))
	}
}

func (s *ForeignSerializer) jsonBody(event []byte) ([]byte, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(event))
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrBadEvent, err)
	}
	if s.fillJSONHeader(v) {
		if event, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadEvent, err)
		}
	}
	if err := s.valid.Validate(v); err != nil {
		return nil, fmt.Errorf("%w: does not match the schema: %s", ErrBadEvent, oneLine(err))
	}
	if err := s.checkReadable(event, v); err != nil {
		return nil, err
	}
	return event, nil
}

// fillJSONHeader sets server and service in an event's header object
// where they are missing or "", if the schema declares them; it reports
// whether it changed anything. The time is the application's: a JSON
// schema does not say in which unit an integer is.
func (s *ForeignSerializer) fillJSONHeader(v any) bool {
	ev, ok := v.(map[string]any)
	if !ok {
		return false
	}
	h, ok := ev[s.cfg.HeaderField].(map[string]any)
	if !ok {
		return false
	}
	changed := false
	for name, val := range map[string]string{"server": s.cfg.Server, "service": s.cfg.Service} {
		// A value that is not a string is left for the validator to name.
		if cur, present := h[name]; s.header[name] && val != "" && (!present || cur == "") {
			h[name] = val
			changed = true
		}
	}
	return changed
}

// declaredHeader returns the properties a JSON schema declares for its
// header object, following the root's own "properties" only.
func declaredHeader(doc any, field string) map[string]bool {
	props := func(v any) map[string]any {
		m, _ := v.(map[string]any)
		p, _ := m["properties"].(map[string]any)
		return p
	}
	out := map[string]bool{}
	for k := range props(props(doc)[field]) {
		out[k] = true
	}
	return out
}

// messageIndexes encodes the path to md in its file as Confluent's
// Protobuf serializers write it: a zigzag varint count, then each index;
// the first top-level message is the single byte 0.
func messageIndexes(md protoreflect.MessageDescriptor) []byte {
	var path []int
	for d := protoreflect.Descriptor(md); ; d = d.Parent() {
		m, ok := d.(protoreflect.MessageDescriptor)
		if !ok {
			break
		}
		path = append([]int{m.Index()}, path...)
	}
	if len(path) == 1 && path[0] == 0 {
		return []byte{0}
	}
	out := binary.AppendVarint(nil, int64(len(path)))
	for _, i := range path {
		out = binary.AppendVarint(out, int64(i))
	}
	return out
}

func messageNames(ms protoreflect.MessageDescriptors) []string {
	var out []string
	for i := 0; i < ms.Len(); i++ {
		out = append(out, string(ms.Get(i).FullName()))
		out = append(out, messageNames(ms.Get(i).Messages())...)
	}
	return out
}
