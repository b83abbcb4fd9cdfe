package transcode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// KeyOrder remembers the order of each JSON object's members as a schema's
// text has them, which a decoded map forgets: a record's columns follow
// the order its properties were written in.
type KeyOrder map[uintptr][]string

// Keys returns m's keys in text order; ok is false for a map the order
// does not know.
func (o KeyOrder) Keys(m map[string]any) (keys []string, ok bool) {
	keys, ok = o[reflect.ValueOf(m).Pointer()]
	return keys, ok
}

// DecodeSchema decodes JSON text as jsonschema.UnmarshalJSON does
// (objects as map[string]any, numbers as json.Number, nothing after the
// value) and records each object's member order in order.
func DecodeSchema(text string, order KeyOrder) (any, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	v, err := decodeOrdered(d, order)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func decodeOrdered(d *json.Decoder, order KeyOrder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		m := map[string]any{}
		var keys []string
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			key, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("object key %v", k)
			}
			v, err := decodeOrdered(d, order)
			if err != nil {
				return nil, err
			}
			if _, dup := m[key]; !dup {
				keys = append(keys, key)
			}
			m[key] = v
		}
		if _, err := d.Token(); err != nil {
			return nil, err
		}
		order[reflect.ValueOf(m).Pointer()] = keys
		return m, nil
	case json.Delim('['):
		a := []any{}
		for d.More() {
			v, err := decodeOrdered(d, order)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		if _, err := d.Token(); err != nil {
			return nil, err
		}
		return a, nil
	}
	return t, nil
}
