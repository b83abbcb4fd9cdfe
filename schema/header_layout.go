package schema

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
)

// DefaultHeaderField is the top-level field that holds an event's header
// unless the user names another one.
const DefaultHeaderField = "header"

// ErrNoHeaderTime means an event has no usable header time: its schema has
// no header the rule below understands, or this event's time is zero or
// null. The error says which.
var ErrNoHeaderTime = errors.New("no header time")

// HeaderLayout is the one rule by which every part of Tributary (the
// producers' counters, the mirror, the loader, `audit count` on brokers and
// warehouses, the header filler) finds an event's header and its time:
//
//   - the header is the top-level field named DefaultHeaderField (or the
//     field the user names), whatever the record's name or namespace; its
//     type is a record, or a union of null and a record;
//   - its time is the header's field "time": a long of epoch milliseconds,
//     with or without the timestamp-millis logical type, or a long with
//     timestamp-micros (converted to milliseconds); or a union of null and
//     one of those;
//   - its server, if any, is the header's field "server", a string (or a
//     union of null and a string).
//
// A layout is built once per writer schema. Reading time from an encoded
// body skips the fields before the header and the header's fields before
// time by their encodings, without decoding them; every Avro type can be
// skipped, so this applies to every layout the rule accepts.
type HeaderLayout struct {
	// Field is the top-level field the header is looked for in.
	Field string

	event  *walkPlan // the whole writer schema, for Check
	reason string    // why there is no time; "" when there is one

	fields     []*walkPlan // the event's top-level fields up to the header
	header     *avro.RecordSchema
	headerNull bool // the header is a union: which branch is the record
	headerIdx  int
	hfields    []*walkPlan // the header's fields up to time and server
	timeIdx    int
	timeBranch int // -1: a plain long; else the union branch of the long
	micros     bool
	serverIdx  int // -1: no server
	serverBr   int
}

// NewHeaderLayout applies the rule to writer schema s, looking for the
// header in field (DefaultHeaderField when empty).
func NewHeaderLayout(s avro.Schema, field string) *HeaderLayout {
	if field == "" {
		field = DefaultHeaderField
	}
	plans := map[avro.Schema]*walkPlan{}
	l := &HeaderLayout{Field: field, event: compileWalkIn(s, plans), timeBranch: -1, serverIdx: -1, serverBr: -1}
	rec, ok := deref(s).(*avro.RecordSchema)
	if !ok {
		l.reason = fmt.Sprintf("the event schema is a %s, not a record", s.Type())
		return l
	}
	hi := -1
	for i, f := range rec.Fields() {
		if f.Name() == field {
			hi = i
			break
		}
	}
	if hi < 0 {
		l.reason = fmt.Sprintf("record %s has no top-level field %q (name the header field with --header-field)", rec.FullName(), field)
		return l
	}
	for _, f := range rec.Fields()[:hi] {
		l.fields = append(l.fields, compileWalkIn(f.Type(), plans))
	}
	ht := deref(rec.Fields()[hi].Type())
	if u, ok := ht.(*avro.UnionSchema); ok {
		br, inner := nullableBranch(u)
		if br < 0 {
			l.reason = fmt.Sprintf("field %s is a union that is not of null and a record", field)
			return l
		}
		l.headerNull, l.headerIdx, ht = true, br, inner
	}
	h, ok := ht.(*avro.RecordSchema)
	if !ok {
		l.reason = fmt.Sprintf("field %s is a %s, not a record", field, ht.Type())
		return l
	}
	l.header = h
	ti := -1
	for i, f := range h.Fields() {
		switch f.Name() {
		case "time":
			ti = i
		case "server":
			br, t := -1, deref(f.Type())
			if u, ok := t.(*avro.UnionSchema); ok {
				br, t = nullableBranch(u)
			}
			if t != nil && t.Type() == avro.String {
				l.serverIdx, l.serverBr = i, br
			}
		}
	}
	if ti < 0 {
		l.reason = fmt.Sprintf("header record %s has no field \"time\"", h.FullName())
		return l
	}
	t := deref(h.Fields()[ti].Type())
	if u, ok := t.(*avro.UnionSchema); ok {
		l.timeBranch, t = nullableBranch(u)
	}
	p, ok := t.(*avro.PrimitiveSchema)
	if !ok || p.Type() != avro.Long {
		l.reason = fmt.Sprintf("%s.time is %s, want a long of epoch milliseconds", field, typeName(h.Fields()[ti].Type()))
		return l
	}
	if lg := p.Logical(); lg != nil && (lg.Type() == avro.TimestampMicros || lg.Type() == avro.LocalTimestampMicros) {
		l.micros = true
	}
	l.timeIdx = ti
	for _, f := range h.Fields()[:max(ti, l.serverIdx)+1] {
		l.hfields = append(l.hfields, compileWalkIn(f.Type(), plans))
	}
	return l
}

// HasTime reports whether events of this schema carry a header time.
func (l *HeaderLayout) HasTime() bool { return l.reason == "" }

// Reason says why events of this schema have no header time ("" when
// they have one).
func (l *HeaderLayout) Reason() string { return l.reason }

// Header is the header record, or nil when the schema has none.
func (l *HeaderLayout) Header() *avro.RecordSchema { return l.header }

// Micros reports whether the header time is encoded in microseconds.
func (l *HeaderLayout) Micros() bool { return l.micros }

// Read returns the header time (epoch milliseconds) and server of an Avro
// body written with the layout's schema. The error wraps ErrNoHeaderTime
// when the event has no usable time, ErrBadBody when the body is too short
// or malformed up to the header fields read.
func (l *HeaderLayout) Read(body []byte) (ms int64, server string, err error) {
	return l.read(body, true)
}

// Time is Read without the server, for callers that file events by time
// only: it allocates nothing.
func (l *HeaderLayout) Time(body []byte) (ms int64, err error) {
	ms, _, err = l.read(body, false)
	return ms, err
}

func (l *HeaderLayout) read(body []byte, wantServer bool) (ms int64, server string, err error) {
	if l.reason != "" {
		return 0, "", fmt.Errorf("%w: %s", ErrNoHeaderTime, l.reason)
	}
	w := walker{b: body}
	for _, f := range l.fields {
		if err := w.skip(f, 0); err != nil {
			return 0, "", err
		}
	}
	if l.headerNull {
		br, err := w.long()
		if err != nil {
			return 0, "", err
		}
		if int(br) != l.headerIdx {
			return 0, "", fmt.Errorf("%w: %s is null", ErrNoHeaderTime, l.Field)
		}
	}
	var hasTime bool
	for i, f := range l.hfields {
		switch i {
		case l.timeIdx:
			if hasTime, err = w.branch(l.timeBranch); err != nil {
				return 0, "", err
			}
			if hasTime {
				if ms, err = w.long(); err != nil {
					return 0, "", err
				}
			}
		case l.serverIdx:
			ok, err := w.branch(l.serverBr)
			if err != nil {
				return 0, "", err
			}
			if ok {
				b, err := w.bytes()
				if err != nil {
					return 0, "", err
				}
				if wantServer {
					server = string(b)
				}
			}
		default:
			if err := w.skip(f, 0); err != nil {
				return 0, "", err
			}
		}
	}
	if !hasTime {
		return 0, "", fmt.Errorf("%w: %s.time is null", ErrNoHeaderTime, l.Field)
	}
	return l.checked(ms, server)
}

// Check reports whether body is exactly one value of the layout's writer
// schema: every length, count, union branch, enum index and boolean in
// range, and no byte left over. It walks the body by its encodings and
// decodes nothing, so it allocates nothing; what it accepts, every Avro
// decoder of the schema decodes. The error wraps ErrBadBody.
//
// A body that passes can be copied as it is into an object container file
// of the same schema (the loader does), which is why the loader needs no
// decoder at all: Check, then Read for the time.
func (l *HeaderLayout) Check(body []byte) error {
	w := walker{b: body}
	if err := w.skip(l.event, 0); err != nil {
		return err
	}
	if len(w.b) > 0 {
		return w.bad(fmt.Sprintf("%d bytes left over after the value", len(w.b)))
	}
	return nil
}

// checked converts and checks a time read by either path.
func (l *HeaderLayout) checked(t int64, server string) (int64, string, error) {
	if l.micros {
		t = floorDiv(t, 1000)
	}
	if t == 0 {
		return 0, "", fmt.Errorf("%w: %s.time is 0", ErrNoHeaderTime, l.Field)
	}
	return t, server, nil
}

// ReadNative is Read for an event already decoded by goavro (the
// Deserializer, an object container file reader): the same rule applied
// to its native form.
func (l *HeaderLayout) ReadNative(v any) (ms int64, server string, err error) {
	if l.reason != "" {
		return 0, "", fmt.Errorf("%w: %s", ErrNoHeaderTime, l.reason)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return 0, "", fmt.Errorf("%w: the event is a %T, not a record", ErrNoHeaderTime, v)
	}
	h, ok := unionValue(m[l.Field], l.headerNull).(map[string]any)
	if !ok {
		return 0, "", fmt.Errorf("%w: %s is null", ErrNoHeaderTime, l.Field)
	}
	server, _ = unionValue(h["server"], l.serverBr >= 0).(string)
	switch t := unionValue(h["time"], l.timeBranch >= 0).(type) {
	case int64:
		return l.checked(t, server)
	case time.Time:
		if t.IsZero() {
			break
		}
		if l.micros {
			return l.checked(t.UnixMicro(), server)
		}
		return l.checked(t.UnixMilli(), server)
	}
	return 0, "", fmt.Errorf("%w: %s.time is null", ErrNoHeaderTime, l.Field)
}

// unionValue unwraps goavro's form of a union value, {"branch": value}.
func unionValue(v any, union bool) any {
	if m, ok := v.(map[string]any); ok && union {
		for _, x := range m {
			return x
		}
	}
	return v
}

// HeaderLayouts applies the rule once per writer schema id and remembers
// the result. It is safe for concurrent use.
type HeaderLayouts struct {
	field string
	des   *Deserializer

	mu      sync.RWMutex
	layouts map[int]*HeaderLayout
}

// NewHeaderLayouts returns layouts for the writer schemas des resolves,
// with the header in field (DefaultHeaderField when empty).
func NewHeaderLayouts(des *Deserializer, field string) *HeaderLayouts {
	if field == "" {
		field = DefaultHeaderField
	}
	return &HeaderLayouts{field: field, des: des, layouts: map[int]*HeaderLayout{}}
}

// Field is the header field the layouts look for.
func (h *HeaderLayouts) Field() string { return h.field }

// Get returns the layout of writer schema id. Its error is the registry's
// (ErrUnknownID for an id it does not know) or a schema that does not
// parse.
func (h *HeaderLayouts) Get(ctx context.Context, id int) (*HeaderLayout, error) {
	h.mu.RLock()
	l, ok := h.layouts[id]
	h.mu.RUnlock()
	if ok {
		return l, nil
	}
	text, err := h.des.WriterSchema(ctx, id)
	if err != nil {
		return nil, err
	}
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("%w: writer schema %d: %v", ErrBadBody, id, err)
	}
	l = NewHeaderLayout(s, h.field)
	h.mu.Lock()
	h.layouts[id] = l
	h.mu.Unlock()
	return l, nil
}

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// nullableBranch returns the non-null branch of a union of null and one
// other type, or -1.
func nullableBranch(u *avro.UnionSchema) (int, avro.Schema) {
	ts := u.Types()
	if len(ts) != 2 {
		return -1, nil
	}
	for i, t := range ts {
		if t.Type() == avro.Null && ts[1-i].Type() != avro.Null {
			return 1 - i, deref(ts[1-i])
		}
	}
	return -1, nil
}

func typeName(s avro.Schema) string {
	s = deref(s)
	if p, ok := s.(*avro.PrimitiveSchema); ok && p.Logical() != nil {
		return fmt.Sprintf("a %s (%s)", p.Type(), p.Logical().Type())
	}
	return fmt.Sprintf("a %s", s.Type())
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
