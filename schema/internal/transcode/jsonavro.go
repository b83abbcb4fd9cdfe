package transcode

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// The Avro side of a compiled JSON schema (json.go): the derived schema
// and the encoding of values under it.

var notName = regexp.MustCompile(`[^A-Za-z0-9_]`)

// avroName makes s a valid Avro name.
func avroName(s string) string {
	s = notName.ReplaceAllString(s, "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "_" + s
	}
	return s
}

// avro returns node n's Avro type; records are named name, their
// records name_field.
func (c *jsCompiler) avro(n *jsNode, name string) (any, error) {
	var t any
	switch n.kind {
	case jsText, jsString:
		t = "string"
	case jsLong:
		t = "long"
	case jsDouble:
		t = "double"
	case jsBool:
		t = "boolean"
	case jsTimestamp:
		t = timestampMicros
	case jsDate:
		t = dateType
	case jsArray, jsMap:
		e, err := c.avro(n.elem, name+"_item")
		if err != nil {
			return nil, err
		}
		if n.kind == jsArray {
			t = array{Type: "array", Items: e}
		} else {
			t = avroMap{Type: "map", Values: e}
		}
	case jsRecord:
		// Names follow the path (Record_a_b), so two paths can meet
		// ("a_b", and "b" inside "a"): the later one is numbered.
		name = typeName(name)
		for i, base := 2, name; c.names[name]; i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		c.names[name] = true
		r := record{Type: "record", Name: name}
		seen := map[string]string{}
		for _, f := range n.fields {
			// "first-name" and "first_name" are both first_name as Avro
			// names: the later one is numbered (its doc names it).
			fn := avroName(f.prop)
			for i, base := 2, fn; seen[fn] != ""; i++ {
				fn = fmt.Sprintf("%s_%d", base, i)
			}
			seen[fn] = f.prop
			ft, err := c.avro(f.node, name+"_"+fn)
			if err != nil {
				return nil, err
			}
			af := field{Name: fn, Type: ft}
			if f.node.nullable {
				af.Default = nullDefault
			}
			if fn != f.prop {
				af.Doc = "JSON property " + strconv.Quote(f.prop)
			}
			r.Fields = append(r.Fields, af)
		}
		t = r
	}
	if n.nullable {
		return nullable(t), nil
	}
	return t, nil
}

// Encode appends the Avro encoding of v, a record's JSON value (decoded
// with numbers as json.Number and already validated against its schema).
func (j *JSON) Encode(dst []byte, v any) ([]byte, error) {
	if j.wrapped {
		return appendJSON(dst, j.root.fields[0].node, v, 0)
	}
	return appendJSON(dst, j.root, v, 0)
}

func appendJSON(dst []byte, n *jsNode, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("values nest more than %d deep", maxDepth)
	}
	if n.nullable {
		if v == nil {
			return append(dst, 0), nil
		}
		dst = append(dst, 2)
	} else if v == nil && n.kind != jsText {
		return nil, errors.New("missing or null")
	}
	var err error
	switch n.kind {
	case jsText:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%v", err)
		}
		return appendBytes(dst, b), nil
	case jsString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%T, not a string", v)
		}
		return appendString(dst, s), nil
	case jsTimestamp, jsDate:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%T, not a string", v)
		}
		if n.kind == jsDate {
			t, err := time.Parse(time.DateOnly, s)
			if err != nil {
				return nil, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
			}
			return appendLong(dst, t.Unix()/86400), nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an RFC 3339 date-time", s)
		}
		return appendLong(dst, t.UnixMicro()), nil
	case jsLong:
		i, err := jsonInt(v)
		if err != nil {
			return nil, err
		}
		return appendLong(dst, i), nil
	case jsDouble:
		num, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%T, not a number", v)
		}
		f, err := num.Float64()
		if err != nil && !math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s: %v", num, err)
		}
		return appendDouble(dst, f), nil
	case jsBool:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("%T, not a boolean", v)
		}
		return appendBool(dst, b), nil
	case jsArray:
		a, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%T, not an array", v)
		}
		if len(a) > 0 {
			dst = appendLong(dst, int64(len(a)))
			for i, e := range a {
				if dst, err = appendJSON(dst, n.elem, e, depth+1); err != nil {
					return nil, fmt.Errorf("[%d]: %w", i, err)
				}
			}
		}
		return append(dst, 0), nil
	case jsMap:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%T, not an object", v)
		}
		if len(m) > 0 {
			dst = appendLong(dst, int64(len(m)))
			for _, k := range slices.Sorted(mapKeys(m)) {
				dst = appendString(dst, k)
				if dst, err = appendJSON(dst, n.elem, m[k], depth+1); err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
			}
		}
		return append(dst, 0), nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%T, not an object", v)
	}
	for _, f := range n.fields {
		if dst, err = appendJSON(dst, f.node, m[f.prop], depth+1); err != nil {
			return nil, fmt.Errorf("%s: %w", f.prop, err)
		}
	}
	return dst, nil
}

// jsonInt reads a JSON integer: 7, or 7.0, which JSON Schema also calls
// an integer.
func jsonInt(v any) (int64, error) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%T, not a number", v)
	}
	if i, err := num.Int64(); err == nil {
		return i, nil
	}
	f, ok := new(big.Float).SetString(num.String())
	if !ok || !f.IsInt() {
		return 0, fmt.Errorf("%s is not an integer", num)
	}
	i, acc := f.Int64()
	if acc != big.Exact {
		return 0, fmt.Errorf("%s does not fit the long column", num)
	}
	return i, nil
}
