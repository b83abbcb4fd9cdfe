package schema

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hamba/avro/v2"
)

// JSONEvents turns one line of plain JSON into goavro's native form for a
// schema, so people can type events as they think of them: unions as the
// bare value ({"referrer": "x"}; the Avro JSON form {"referrer":
// {"string": "x"}} works too), missing fields with defaults left out
// (goavro fills them), timestamps as epoch milliseconds or RFC 3339, and
// the standard header optional: whatever of it is missing, the serializer
// fills in.
type JSONEvents struct {
	schema avro.Schema
	header avro.Schema // the header record the serializer fills, or nil
	field  string      // the top-level field holding it
}

// NewJSONEvents reads events of schema text whose header is its top-level
// field headerField (found by HeaderLayout, as every tier finds it).
func NewJSONEvents(text, headerField string) (*JSONEvents, error) {
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, err
	}
	if _, ok := s.(*avro.RecordSchema); !ok {
		return nil, fmt.Errorf("the event schema is a %s, want a record", s.Type())
	}
	l := NewHeaderLayout(s, headerField)
	j := &JSONEvents{schema: s, field: l.Field}
	if h := l.Header(); h != nil {
		j.header = h
	}
	return j, nil
}

func (j *JSONEvents) Decode(line []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value on the line")
	}
	n, err := j.toNative(j.schema, v, "")
	if err != nil {
		return nil, err
	}
	return n.(map[string]any), nil
}

func (j *JSONEvents) toNative(s avro.Schema, v any, path string) (any, error) {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	bad := func(want string) error {
		if path == "" {
			return fmt.Errorf("the event is %s, want %s", jsonKind(v), want)
		}
		return fmt.Errorf("field %s is %s, want %s", path, jsonKind(v), want)
	}
	switch s := s.(type) {
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, bad("an object")
		}
		// The header's fields may be left out or null: the serializer
		// fills them.
		header := j.header != nil && path == j.field && avro.Schema(s) == j.header
		out := make(map[string]any, len(s.Fields()))
		for _, f := range s.Fields() {
			fv, ok := m[f.Name()]
			if !ok {
				// Left out: goavro uses the default, the serializer fills
				// the header, and anything else is reported by the encoder.
				continue
			}
			if header && fv == nil {
				continue
			}
			n, err := j.toNative(f.Type(), fv, join(path, f.Name()))
			if err != nil {
				return nil, err
			}
			out[f.Name()] = n
		}
		for k := range m {
			if !hasField(s, k) {
				return nil, fmt.Errorf("field %s is not in the schema %s", join(path, k), s.FullName())
			}
		}
		return out, nil
	case *avro.UnionSchema:
		return j.unionNative(s, v, path)
	case *avro.EnumSchema:
		str, ok := v.(string)
		if !ok {
			return nil, bad("a symbol of " + s.FullName())
		}
		for _, sym := range s.Symbols() {
			if sym == str {
				return str, nil
			}
		}
		return nil, fmt.Errorf("field %s: %q is not a symbol of %s %v", path, str, s.FullName(), s.Symbols())
	case *avro.FixedSchema:
		str, ok := v.(string)
		if !ok {
			return nil, bad(fmt.Sprintf("a string of %d bytes", s.Size()))
		}
		if b := latin1(str); len(b) == s.Size() {
			return b, nil
		}
		if b, err := hex.DecodeString(str); err == nil && len(b) == s.Size() {
			return b, nil
		}
		return nil, fmt.Errorf("field %s: want %d bytes (as Avro JSON characters or %d hex digits)", path, s.Size(), 2*s.Size())
	case *avro.ArraySchema:
		arr, ok := v.([]any)
		if !ok {
			return nil, bad("an array")
		}
		out := make([]any, len(arr))
		for i, x := range arr {
			n, err := j.toNative(s.Items(), x, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, bad("an object")
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			n, err := j.toNative(s.Values(), x, join(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case *avro.PrimitiveSchema:
		return primitiveNative(s, v, path, bad)
	}
	return nil, fmt.Errorf("field %s: schema type %s is not supported", path, s.Type())
}

func primitiveNative(s *avro.PrimitiveSchema, v any, path string, bad func(string) error) (any, error) {
	if l := s.Logical(); l != nil {
		switch l.Type() {
		case avro.TimestampMillis, avro.TimestampMicros, avro.Date:
			return timeNative(l.Type(), v, path, bad)
		}
	}
	switch s.Type() {
	case avro.Null:
		if v != nil {
			return nil, bad("null")
		}
		return nil, nil
	case avro.Boolean:
		b, ok := v.(bool)
		if !ok {
			return nil, bad("true or false")
		}
		return b, nil
	case avro.Int, avro.Long:
		num, ok := v.(json.Number)
		if !ok {
			return nil, bad("an integer")
		}
		bits := 64
		if s.Type() == avro.Int {
			bits = 32
		}
		n, err := strconv.ParseInt(num.String(), 10, bits)
		if err != nil {
			return nil, fmt.Errorf("field %s: %s is not a %d-bit integer", path, num, bits)
		}
		if bits == 32 {
			return int32(n), nil
		}
		return n, nil
	case avro.Float, avro.Double:
		num, ok := v.(json.Number)
		if !ok {
			return nil, bad("a number")
		}
		f, err := num.Float64()
		if err != nil {
			return nil, fmt.Errorf("field %s: %s is not a number", path, num)
		}
		if s.Type() == avro.Float {
			return float32(f), nil
		}
		return f, nil
	case avro.String:
		str, ok := v.(string)
		if !ok {
			return nil, bad("a string")
		}
		return str, nil
	case avro.Bytes:
		str, ok := v.(string)
		if !ok {
			return nil, bad("a string of bytes")
		}
		return latin1(str), nil
	}
	return nil, fmt.Errorf("field %s: type %s is not supported", path, s.Type())
}

// timeNative accepts epoch milliseconds (microseconds, days) or RFC 3339.
func timeNative(lt avro.LogicalType, v any, path string, bad func(string) error) (any, error) {
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(x.String(), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("field %s: %s is not an integer", path, x)
		}
		switch lt {
		case avro.TimestampMicros:
			return time.UnixMicro(n).UTC(), nil
		case avro.Date:
			return time.Unix(n*86400, 0).UTC(), nil
		}
		return time.UnixMilli(n).UTC(), nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return nil, fmt.Errorf("field %s: %q is not RFC 3339 (2024-05-01T10:00:00Z)", path, x)
		}
		return t, nil
	}
	return nil, bad("a time (epoch number or RFC 3339 string)")
}

// unionNative picks the branch for a value: the Avro JSON form names it,
// null is null, otherwise the first branch the value fits.
func (j *JSONEvents) unionNative(s *avro.UnionSchema, v any, path string) (any, error) {
	if v == nil {
		if s.Nullable() {
			return nil, nil
		}
		return nil, fmt.Errorf("field %s is null, which the union does not allow", path)
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for name, x := range m {
			if t := branch(s, name); t != nil {
				n, err := j.toNative(t, x, path)
				if err != nil {
					return nil, err
				}
				return map[string]any{name: n}, nil
			}
		}
	}
	var firstErr error
	for _, t := range s.Types() {
		if t.Type() == avro.Null {
			continue
		}
		n, err := j.toNative(t, v, path)
		if err == nil {
			return map[string]any{branchName(t): n}, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("field %s fits no branch of its union: %w", path, firstErr)
}

func branch(s *avro.UnionSchema, name string) avro.Schema {
	for _, t := range s.Types() {
		if branchName(t) == name {
			return t
		}
	}
	return nil
}

// branchName is how goavro names a union branch: the full name of a named
// type, the type otherwise.
func branchName(t avro.Schema) string {
	if ref, ok := t.(*avro.RefSchema); ok {
		t = ref.Schema()
	}
	if n, ok := t.(avro.NamedSchema); ok {
		return n.FullName()
	}
	if p, ok := t.(*avro.PrimitiveSchema); ok && p.Logical() != nil {
		return string(p.Type()) + "." + string(p.Logical().Type())
	}
	return string(t.Type())
}

func hasField(s *avro.RecordSchema, name string) bool {
	for _, f := range s.Fields() {
		if f.Name() == name {
			return true
		}
	}
	return false
}

// latin1 is Avro's JSON encoding of bytes: each character one byte.
func latin1(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		out = append(out, byte(r))
	}
	return out
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
