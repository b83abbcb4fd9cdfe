package schema

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/hamba/avro/v2"
)

// HeaderSchemaName is the full name of the project's own event header
// record (testdata/schemas/header.avsc). It is one header among many: the
// rule that finds a header (HeaderLayout) goes by the field's name, never
// by the record's, since users bring their own schemas.
const HeaderSchemaName = "tributary.events.Header"

// Header is the standard event header for events encoded from Go structs:
// embed it as a field tagged `avro:"header"`. Events encoded from maps use a
// map[string]any with the same keys.
type Header struct {
	// Time is when the event happened, in epoch milliseconds.
	Time int64 `avro:"time"`
	// Server is the host that produced the event.
	Server string `avro:"server"`
	// Service is the service that produced the event.
	Service string `avro:"service"`
	// GUID identifies this event, so duplicates can be told apart from
	// repeats.
	GUID [16]byte `avro:"guid"`
}

// HeaderTime returns header.time, in epoch milliseconds, from an event
// decoded by a Deserializer (or a *struct / struct with a Header field
// tagged `avro:"header"`). It returns false when the value has no header or
// the header has no time. It is a convenience for applications holding a
// value without its schema; Tributary's own parts read the time with a
// HeaderLayout, which knows the schema.
func HeaderTime(native any) (int64, bool) {
	switch v := native.(type) {
	case map[string]any:
		h, ok := v["header"].(map[string]any)
		if !ok {
			return 0, false
		}
		return millis(h["time"])
	case Header:
		return v.Time, v.Time != 0
	case *Header:
		if v == nil {
			return 0, false
		}
		return v.Time, v.Time != 0
	}
	rv := reflect.ValueOf(native)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return 0, false
	}
	i, ok := headerFieldIndex(rv.Type(), DefaultHeaderField)
	if !ok {
		return 0, false
	}
	return HeaderTime(rv.Field(i).Interface())
}

// millis converts the forms goavro and hamba use for timestamp-millis
// (time.Time) and plain longs to epoch milliseconds.
func millis(v any) (int64, bool) {
	switch t := v.(type) {
	case time.Time:
		if t.IsZero() {
			return 0, false
		}
		return t.UnixMilli(), true
	case int64:
		return t, t != 0
	case int:
		return int64(t), t != 0
	case int32:
		return int64(t), t != 0
	}
	return 0, false
}

// headerFiller fills the header fields an application left empty, those
// of them that the schema's header record has.
type headerFiller struct {
	field   string // the top-level header field
	server  string
	service string
	now     func() time.Time

	micros                bool // header.time is timestamp-micros
	hasServer, hasService bool
	hasGUID               bool
}

// newHeaderFiller returns a filler for the header HeaderLayout finds in s,
// or nil when s has none the filler can complete (a header that is a union
// is the application's to fill).
func newHeaderFiller(s avro.Schema, field string) *headerFiller {
	l := NewHeaderLayout(s, field)
	if !l.HasTime() || l.headerNull || l.timeBranch >= 0 {
		return nil
	}
	f := &headerFiller{field: l.Field, micros: l.micros}
	for _, hf := range l.header.Fields() {
		t := deref(hf.Type())
		switch hf.Name() {
		case "server":
			f.hasServer = t.Type() == avro.String
		case "service":
			f.hasService = t.Type() == avro.String
		case "guid":
			fx, ok := t.(*avro.FixedSchema)
			f.hasGUID = (ok && fx.Size() == 16) || t.Type() == avro.Bytes
		}
	}
	return f
}

// fillMap returns m with its header completed. m itself is not modified:
// applications often reuse one map for many events, and a guid written into
// it would be sent again with the next event.
func (f *headerFiller) fillMap(m map[string]any) map[string]any {
	var h map[string]any
	switch v := m[f.field].(type) {
	case nil:
		h = map[string]any{}
	case map[string]any:
		if f.complete(v) {
			return m
		}
		h = make(map[string]any, 4)
		for k, x := range v {
			h[k] = x
		}
	case Header:
		h = map[string]any{"time": v.Time, "server": v.Server, "service": v.Service, "guid": v.GUID[:]}
	case *Header:
		h = map[string]any{"time": v.Time, "server": v.Server, "service": v.Service, "guid": v.GUID[:]}
	default:
		return m // not ours to fix; the encoder reports the type error
	}
	if _, ok := millis(h["time"]); !ok {
		if f.micros {
			h["time"] = f.now().UnixMicro()
		} else {
			h["time"] = f.now().UnixMilli()
		}
	}
	if s, _ := h["server"].(string); s == "" && f.hasServer {
		h["server"] = f.server
	}
	if s, _ := h["service"].(string); s == "" && f.hasService {
		h["service"] = f.service
	}
	if !guidSet(h["guid"]) && f.hasGUID {
		g := newGUID()
		h["guid"] = g[:]
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[k] = x
	}
	out[f.field] = h
	return out
}

// complete reports whether a header map needs nothing filled in.
func (f *headerFiller) complete(h map[string]any) bool {
	_, ok := millis(h["time"])
	server, _ := h["server"].(string)
	service, _ := h["service"].(string)
	return ok && (server != "" || !f.hasServer) && (service != "" || !f.hasService) && (guidSet(h["guid"]) || !f.hasGUID)
}

func guidSet(v any) bool {
	var b []byte
	switch g := v.(type) {
	case []byte:
		b = g
	case [16]byte:
		b = g[:]
	case string:
		b = []byte(g)
	default:
		return false
	}
	for _, c := range b {
		if c != 0 {
			return true
		}
	}
	return false
}

// fillHeader completes h in place.
func (f *headerFiller) fillHeader(h *Header) {
	if h.Time == 0 {
		h.Time = f.now().UnixMilli()
	}
	if h.Server == "" {
		h.Server = f.server
	}
	if h.Service == "" {
		h.Service = f.service
	}
	if h.GUID == ([16]byte{}) {
		h.GUID = newGUID()
	}
}

// newGUID returns 16 random bytes. The guid tells duplicates (the same
// event delivered twice) from repeats (two equal events); it needs to be
// unique, not secret, and math/rand/v2's generator (ChaCha8, seeded by the
// runtime, per thread) is many times cheaper than a crypto/rand syscall.
func newGUID() [16]byte {
	var g [16]byte
	binary.LittleEndian.PutUint64(g[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(g[8:], rand.Uint64())
	return g
}

// fillStruct returns a copy of the struct behind v with its Header field
// completed, or v unchanged when it has no such field.
func (f *headerFiller) fillStruct(v any) any {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return v
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return v
	}
	i, ok := headerFieldIndex(rv.Type(), f.field)
	if !ok {
		return v
	}
	cp := reflect.New(rv.Type()).Elem()
	cp.Set(rv)
	switch hf := cp.Field(i); hf.Kind() {
	case reflect.Struct:
		h := hf.Addr().Interface().(*Header)
		f.fillHeader(h)
	case reflect.Pointer:
		h := &Header{}
		if !hf.IsNil() {
			*h = *hf.Interface().(*Header)
		}
		f.fillHeader(h)
		hf.Set(reflect.ValueOf(h))
	}
	return cp.Addr().Interface()
}

var headerType = reflect.TypeFor[Header]()

// headerFieldIndex finds the exported field of type Header or *Header that
// encodes as field.
func headerFieldIndex(t reflect.Type, field string) (int, bool) {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Type != headerType && sf.Type != reflect.PointerTo(headerType) {
			continue
		}
		name := sf.Tag.Get("avro")
		if name == "" {
			name = sf.Name
		}
		if name == field {
			return i, true
		}
	}
	return 0, false
}
