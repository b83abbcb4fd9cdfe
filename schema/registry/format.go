package registry

import (
	"fmt"
	"strings"

	"github.com/tributary-io/tributary/schema/internal/avsc"
)

// Schema types the registry stores, as Confluent names them in
// "schemaType" (absent means AVRO).
const (
	typeAvro = "AVRO"
	typeJSON = "JSON"
)

// schemaDoc is a parsed schema of any type the registry serves. Key is
// its identity: equal keys are the same schema, with one id; keys of
// different types never meet.
type schemaDoc struct {
	Type  string // typeAvro or typeJSON
	Text  string // as registered
	Key   string
	avro  *avsc.Schema // AVRO
	json  any          // JSON: the decoded document (jsonschema.go)
	proto *protoDoc    // PROTOBUF (protobuf.go)
	// contract is the schema's metadata and rule set (contract.go), part
	// of its Key.
	contract *contract
}

// parseType returns the canonical schema type of a request or record, or
// false if the registry does not serve it.
func parseType(t string) (string, bool) {
	switch u := strings.ToUpper(strings.TrimSpace(t)); u {
	case "", typeAvro:
		return typeAvro, true
	case typeJSON:
		return typeJSON, true
	case typeProtobuf:
		return typeProtobuf, true
	}
	return "", false
}

// parseSchema parses text as a schema of type typ within lim, with deps
// the texts its references reach (references.go).
func parseSchema(typ, text string, lim schemaLimits, refs []schemaRef, deps []refDep) (*schemaDoc, error) {
	t, ok := parseType(typ)
	if !ok {
		return nil, fmt.Errorf("schema type %s is not supported; this registry stores AVRO, JSON and PROTOBUF schemas", typ)
	}
	// The widths measured in a text are those of Avro's JSON; a JSON
	// schema's are measured again once decoded, a Protobuf schema's once
	// compiled, so for .proto text only its size and nesting count here.
	pre := lim
	if t == typeProtobuf {
		pre = lim.replay()
	}
	if err := pre.check(text); err != nil {
		return nil, err
	}
	for _, d := range deps {
		if d.typ != t {
			return nil, fmt.Errorf("reference %q is a %s schema; a %s schema may reference only %s schemas", d.name, d.typ, t, t)
		}
	}
	var (
		doc *schemaDoc
		err error
	)
	switch t {
	case typeJSON:
		doc, err = parseJSONSchema(text, lim, deps)
	case typeProtobuf:
		doc, err = parseProtobuf(text, lim, deps)
	default:
		var a *avsc.Schema
		if a, err = avsc.ParseReferencing(text, depTexts(deps)); err == nil {
			doc = &schemaDoc{Type: typeAvro, Text: text, Key: a.Key, avro: a}
		}
	}
	if err != nil {
		return nil, err
	}
	doc.Key += refsKey(refs)
	return doc, nil
}

// showType is the schemaType the API shows: none for AVRO, as Confluent.
func (d *schemaDoc) showType() string {
	if d.Type == typeAvro {
		return ""
	}
	return d.Type
}
