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

	// The writer schema compiled for the walker, into two programs that
	// read the header on their way: checkProg walks the whole event,
	// readProg stops at the header's time and server.
	plan                *walkPlan
	checkProg, readProg int32
	reason              string // why there is no time; "" when there is one

	header     *avro.RecordSchema
	headerNull bool // the header is a union of null and the record
	timeBranch int8 // -1: a plain long; else the union branch of the long
	micros     bool
	serverBr   int8 // -1: a plain string or no server; else the union branch of the string

	derived bool // of an Avro schema derived from a Protobuf or JSON one
}

// Derived tells a layout of an Avro schema derived from a Protobuf or
// JSON schema: its records' bodies must be converted (HeaderLayouts.Body)
// before it reads them.
func (l *HeaderLayout) Derived() bool { return l.derived }

// NewHeaderLayout applies the rule to writer schema s, looking for the
// header in field (DefaultHeaderField when empty).
func NewHeaderLayout(s avro.Schema, field string) *HeaderLayout {
	if field == "" {
		field = DefaultHeaderField
	}
	l := &HeaderLayout{Field: field, timeBranch: -1, serverBr: -1}
	c := newWalkCompiler()
	l.plan = c.p
	rec, ti, si := l.find(s)
	if l.reason != "" {
		l.checkProg = c.prog(func(ops []walkOp) []walkOp { return c.value(ops, s) })
		c.finish()
		return l
	}
	l.checkProg = c.prog(func(ops []walkOp) []walkOp { return l.compile(c, ops, rec, ti, si, false) })
	l.readProg = c.prog(func(ops []walkOp) []walkOp { return l.compile(c, ops, rec, ti, si, true) })
	c.finish()
	return l
}

// find applies the rule to s: it returns the event record and the
// indexes of the header's time and server fields (-1: no server), or sets
// l.reason.
func (l *HeaderLayout) find(s avro.Schema) (rec *avro.RecordSchema, ti, si int) {
	rec, ok := deref(s).(*avro.RecordSchema)
	if !ok {
		l.reason = fmt.Sprintf("the event schema is a %s, not a record", s.Type())
		return nil, 0, 0
	}
	field := l.Field
	hi := -1
	for i, f := range rec.Fields() {
		if f.Name() == field {
			hi = i
			break
		}
	}
	if hi < 0 {
		l.reason = fmt.Sprintf("record %s has no top-level field %q (name the header field with --header-field)", rec.FullName(), field)
		return nil, 0, 0
	}
	ht := deref(rec.Fields()[hi].Type())
	if u, ok := ht.(*avro.UnionSchema); ok {
		br, inner := nullableBranch(u)
		if br < 0 {
			l.reason = fmt.Sprintf("field %s is a union that is not of null and a record", field)
			return nil, 0, 0
		}
		l.headerNull, ht = true, inner
	}
	h, ok := ht.(*avro.RecordSchema)
	if !ok {
		l.reason = fmt.Sprintf("field %s is a %s, not a record", field, ht.Type())
		return nil, 0, 0
	}
	l.header = h
	ti, si = -1, -1
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
				si, l.serverBr = i, int8(br)
			}
		}
	}
	if ti < 0 {
		l.reason = fmt.Sprintf("header record %s has no field \"time\"", h.FullName())
		return nil, 0, 0
	}
	t := deref(h.Fields()[ti].Type())
	if u, ok := t.(*avro.UnionSchema); ok {
		var br int
		br, t = nullableBranch(u)
		l.timeBranch = int8(br)
	}
	p, ok := t.(*avro.PrimitiveSchema)
	if !ok || p.Type() != avro.Long {
		l.reason = fmt.Sprintf("%s.time is %s, want a long of epoch milliseconds", field, typeName(h.Fields()[ti].Type()))
		return nil, 0, 0
	}
	if lg := p.Logical(); lg != nil && (lg.Type() == avro.TimestampMicros || lg.Type() == avro.LocalTimestampMicros) {
		l.micros = true
	}
	return rec, ti, si
}

// compile appends the ops of event record rec with those of its header
// field replaced by ops that read the header's time (field ti) and server
// (field si). For Read (stop), the walk stops after them.
func (l *HeaderLayout) compile(c *walkCompiler, ops []walkOp, rec *avro.RecordSchema, ti, si int, stop bool) []walkOp {
	header := func(ops []walkOp) []walkOp {
		ops = append(ops, walkOp{kind: walkHeader})
		c.inlining[l.header] = true
		for i, f := range l.header.Fields() {
			switch i {
			case ti:
				ops = append(ops, walkOp{kind: walkTime, br: l.timeBranch})
			case si:
				ops = append(ops, walkOp{kind: walkServer, br: l.serverBr})
			default:
				ops = c.value(ops, f.Type())
			}
			if stop && i == max(ti, si) {
				ops = append(ops, walkOp{kind: walkStop})
				break
			}
		}
		delete(c.inlining, l.header)
		return ops
	}
	c.inlining[rec] = true
	defer delete(c.inlining, rec)
	for _, f := range rec.Fields() {
		if f.Name() != l.Field {
			ops = c.value(ops, f.Type())
			continue
		}
		if u, ok := deref(f.Type()).(*avro.UnionSchema); ok {
			// A union of null and the header: its record branch reads it.
			br, _ := nullableBranch(u)
			first := int32(len(c.p.branches))
			c.p.branches = append(c.p.branches, 0, 0)
			c.p.branches[int(first)+1-br] = c.prog(func(ops []walkOp) []walkOp { return ops })
			c.p.branches[int(first)+br] = c.prog(header)
			ops = append(ops, walkOp{kind: walkUnion, n: 2, sub: first})
		} else {
			ops = header(ops)
		}
		if stop {
			return append(ops, walkOp{kind: walkStop})
		}
	}
	return ops
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
	if err := w.run(l.plan, l.plan.progs[l.readProg], 0); err != nil && err != errStop {
		return 0, "", err
	}
	return l.found(&w, wantServer)
}

// Check reports whether body is exactly one value of the layout's writer
// schema: every length, count, union branch, enum index and boolean in
// range, no map key twice, and no byte left over. It walks the body by its
// encodings and decodes nothing, so it allocates nothing; what it accepts,
// every Avro decoder of the schema decodes. The error wraps ErrBadBody.
//
// A body that passes can be copied as it is into an object container file
// of the same schema (the loader does), which is why the loader needs no
// decoder at all. CheckTime and CheckRead check the same and read the
// header in the same walk.
func (l *HeaderLayout) Check(body []byte) error {
	_, err := l.walk(body)
	return err
}

// CheckTime is Check and Time in one walk, for the loader, which runs it
// on every record it loads. A body that fails Check gives Check's error
// (ErrBadBody); one that passes gives Time's answer.
func (l *HeaderLayout) CheckTime(body []byte) (ms int64, err error) {
	w, err := l.walk(body)
	if err != nil {
		return 0, err
	}
	ms, _, err = l.found(&w, false)
	return ms, err
}

// CheckRead is Check and Read in one walk: a body that fails Check gives
// Check's error (ErrBadBody); one that passes gives Read's answer.
func (l *HeaderLayout) CheckRead(body []byte) (ms int64, server string, err error) {
	w, err := l.walk(body)
	if err != nil {
		return 0, "", err
	}
	return l.found(&w, true)
}

// walk runs the check program over body: what Check checks, with the
// header read on the way.
func (l *HeaderLayout) walk(body []byte) (walker, error) {
	w := walker{b: body}
	if err := w.run(l.plan, l.plan.progs[l.checkProg], 0); err != nil {
		return w, err
	}
	if len(w.b) > 0 {
		return w, w.bad(fmt.Sprintf("%d bytes left over after the value", len(w.b)))
	}
	return w, nil
}

// found is the time and server a walk read, or why there is no time.
func (l *HeaderLayout) found(w *walker, wantServer bool) (int64, string, error) {
	switch {
	case l.reason != "":
		return 0, "", fmt.Errorf("%w: %s", ErrNoHeaderTime, l.reason)
	case !w.header:
		return 0, "", fmt.Errorf("%w: %s is null", ErrNoHeaderTime, l.Field)
	case !w.hasTime:
		return 0, "", fmt.Errorf("%w: %s.time is null", ErrNoHeaderTime, l.Field)
	}
	var server string
	if wantServer {
		server = string(w.server)
	}
	return l.checked(w.ms, server)
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
	layouts map[Writer]*HeaderLayout
}

// NewHeaderLayouts returns layouts for the writer schemas des resolves,
// with the header in field (DefaultHeaderField when empty).
func NewHeaderLayouts(des *Deserializer, field string) *HeaderLayouts {
	if field == "" {
		field = DefaultHeaderField
	}
	return &HeaderLayouts{field: field, des: des, layouts: map[Writer]*HeaderLayout{}}
}

// Field is the header field the layouts look for.
func (h *HeaderLayouts) Field() string { return h.field }

// Get returns the layout of writer schema id. Its error is the registry's
// (ErrUnknownID for an id it does not know) or a schema that does not
// parse.
func (h *HeaderLayouts) Get(ctx context.Context, id int) (*HeaderLayout, error) {
	return h.Of(ctx, Writer{ID: id})
}

// Of is Get for a Writer (Deserializer.AvroBody).
func (h *HeaderLayouts) Of(ctx context.Context, w Writer) (*HeaderLayout, error) {
	h.mu.RLock()
	l, ok := h.layouts[w]
	h.mu.RUnlock()
	if ok {
		return l, nil
	}
	text, err := h.des.WriterSchemaOf(ctx, w)
	if err != nil {
		return nil, err
	}
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("%w: writer %s: %v", ErrBadBody, w, err)
	}
	l = NewHeaderLayout(s, h.field)
	h.des.mu.RLock()
	l.derived = h.des.foreign[w.ID] != nil
	h.des.mu.RUnlock()
	h.mu.Lock()
	h.layouts[w] = l
	h.mu.Unlock()
	return l, nil
}

// Body returns the layout of a record's body (after the envelope's 5
// bytes), its writer and the body in Avro (Deserializer.AvroBody): what
// the layout reads. A Protobuf or JSON body has been converted whole, and
// so checked; an Avro one is neither.
func (h *HeaderLayouts) Body(ctx context.Context, id int, body []byte) (*HeaderLayout, Writer, []byte, error) {
	w, out, err := h.des.AvroBody(ctx, id, body)
	if err != nil {
		return nil, Writer{}, nil, err
	}
	l, err := h.Of(ctx, w)
	if err != nil {
		return nil, Writer{}, nil, err
	}
	return l, w, out, nil
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
