// Package avsc holds the Avro schema operations that the serde and the
// registry must agree on: how a schema text is parsed and validated, when two
// schema texts are "the same schema", and whether one can read the other.
//
// Parsing and compatibility come from github.com/hamba/avro (it implements
// the specification's resolution rules); a schema is accepted only if
// github.com/linkedin/goavro, which the serde encodes with, accepts it too,
// so the registry never hands out a schema our own serializer cannot use.
package avsc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/linkedin/goavro/v2"
)

// Schema is a parsed schema in the forms both Avro libraries need.
type Schema struct {
	Text  string        // as given
	Avro  avro.Schema   // hamba: compatibility, resolution, structs
	Codec *goavro.Codec // goavro: maps in its native form
	Key   string        // identity, see Key
}

// Parse parses and validates an Avro schema in its JSON form.
//
// Every call uses a fresh name cache: hamba's default cache is global, so a
// schema could otherwise resolve a name it never defines to a type that some
// other schema defined earlier — on the registry, another user's schema.
func Parse(text string) (*Schema, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("empty schema")
	}
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, err
	}
	codec, err := newCodec(text)
	if err != nil {
		return nil, fmt.Errorf("rejected by the goavro encoder: %w", err)
	}
	key, err := Key(s)
	if err != nil {
		return nil, err
	}
	return &Schema{Text: text, Avro: s, Codec: codec, Key: key}, nil
}

// newCodec is goavro.NewCodec, which panics on some schemas hamba takes
// (a record named "long" with a field of type long): the panic is an
// error, so the registry refuses such a schema instead of dropping the
// request, and replaying `_schemas` never stops on one.
func newCodec(text string) (c *goavro.Codec, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return goavro.NewCodec(text)
}

// Key returns the identity of a schema: two schemas with equal keys are
// registered under the same id.
//
// The key is the Parsing Canonical Form (full names, fixed attribute order,
// no whitespace) plus the attributes that change what a reader sees: logical
// types, field defaults and aliases, enum defaults. Docs, field order
// hints and custom properties are left out. The pure canonical form drops
// defaults, which would make "add a default to a field" — the usual first
// step of removing it — a no-op that returns the old id and silently keeps
// the default out of every later compatibility check.
func Key(s avro.Schema) (string, error) {
	full, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(full))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	// encoding/json writes map keys sorted, which fixes the attribute order.
	out, err := json.Marshal(keepSchema(v))
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// schemaAttrs are the attributes of a type that survive into the key.
var schemaAttrs = map[string]bool{
	"type": true, "name": true, "aliases": true, "fields": true, "symbols": true,
	"items": true, "values": true, "size": true, "default": true,
	"logicalType": true, "precision": true, "scale": true,
}

// fieldAttrs are the attributes of a record field that survive into the key.
var fieldAttrs = map[string]bool{"name": true, "type": true, "default": true, "aliases": true}

// keepSchema strips a JSON schema node down to the attributes in the key.
// Default values are data, not schemas, so they are copied untouched.
func keepSchema(v any) any {
	switch n := v.(type) {
	case []any: // a union
		out := make([]any, len(n))
		for i, t := range n {
			out[i] = keepSchema(t)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, a := range n {
			if !schemaAttrs[k] {
				continue
			}
			switch k {
			case "type", "items", "values":
				out[k] = keepSchema(a)
			case "fields":
				fields, _ := a.([]any)
				kept := make([]any, len(fields))
				for i, f := range fields {
					kept[i] = keepField(f)
				}
				out[k] = kept
			default:
				out[k] = a
			}
		}
		return out
	default: // a primitive or a reference to a named type, by name
		return v
	}
}

func keepField(v any) any {
	f, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(f))
	for k, a := range f {
		if !fieldAttrs[k] {
			continue
		}
		if k == "type" {
			a = keepSchema(a)
		}
		out[k] = a
	}
	return out
}

// Compatible returns nil when data written with writer can be read with
// reader under the Avro specification's resolution rules, and otherwise an
// error saying what breaks.
//
// Each call uses a fresh checker: hamba's checker caches results by schema
// fingerprints, which ignore defaults, so a cached answer for one reader
// could be reused for a reader that differs from it only by a default.
func Compatible(reader, writer avro.Schema) error {
	return avro.NewSchemaCompatibility().Compatible(reader, writer)
}

// ParseReferencing parses a schema that uses named types defined in other
// schemas (Confluent's schema references): deps are those schemas' texts,
// each after the ones it uses itself. Names resolve only to types that
// text or deps define, through a cache private to the call.
//
// goavro cannot take named types from outside a schema, so such a schema
// has no Codec: the registry stores, checks and serves it, and Confluent's
// serializers, which resolve references themselves, use it.
func ParseReferencing(text string, deps []string) (*Schema, error) {
	if len(deps) == 0 {
		return Parse(text)
	}
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("empty schema")
	}
	cache := &avro.SchemaCache{}
	for i, d := range deps {
		if _, err := avro.ParseWithCache(d, "", cache); err != nil {
			return nil, fmt.Errorf("referenced schema %d of %d: %w", i+1, len(deps), err)
		}
	}
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, err
	}
	key, err := Key(s)
	if err != nil {
		return nil, err
	}
	return &Schema{Text: text, Avro: s, Key: key}, nil
}
