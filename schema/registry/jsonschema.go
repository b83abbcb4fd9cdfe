package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tributary-io/tributary/schema/internal/jsschema"
)

// JSON Schema (schemaType JSON). A schema is compiled, and so checked
// against its draft's metaschema, by github.com/santhosh-tekuri/jsonschema
// (drafts 4, 6, 7, 2019-09 and 2020-12; without "$schema", draft 7, as
// Confluent assumes). Its identity is its canonical JSON: keys sorted, no
// insignificant whitespace, numbers as written.
//
// The compiler (schema/internal/jsschema) never reads a file or the
// network: a "$ref" reaches the schema itself, a draft's metaschema (built
// in), or a schema reference by its name; anything else is refused. Patterns are Go
// regular expressions (RE2), which run in linear time; an ECMAScript-only
// pattern (lookaround, backreferences) is refused.

func parseJSONSchema(text string, lim schemaLimits, deps []refDep) (*schemaDoc, error) {
	doc, err := decodeJSONSchema(text, lim)
	if err != nil {
		return nil, err
	}
	refs, err := decodeJSONDeps(deps, lim)
	if err != nil {
		return nil, err
	}
	if _, err := jsschema.Compile(doc, refs); err != nil {
		return nil, err
	}
	canon, err := json.Marshal(doc) // maps marshal with sorted keys; json.Number as written
	if err != nil {
		return nil, err
	}
	return &schemaDoc{Type: typeJSON, Text: text, Key: typeJSON + "\x00" + string(canon), json: withRefs(doc, refs)}, nil
}

// decodeJSONSchema decodes a JSON schema text within lim.
func decodeJSONSchema(text string, lim schemaLimits) (any, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, errors.New("a JSON schema is an object or a boolean")
	}
	if err := jsonWidths(doc, lim); err != nil {
		return nil, err
	}
	return doc, nil
}

// jsonWidths bounds a JSON schema as the Avro measure bounds Avro ones:
// its values count as nodes (MaxSchemaNodes), and no object may have
// more members, nor array more elements, than MaxSchemaFields. The
// compatibility check matches properties by name, so widths cost it
// linear time; the bound keeps compiling and checking cheap.
func jsonWidths(doc any, lim schemaLimits) error {
	nodes := 0
	var walk func(v any) error
	walk = func(v any) error {
		if nodes++; nodes > lim.maxNodes {
			return fmt.Errorf("schema has more than %d JSON values; the limit is %d (MaxSchemaNodes, --schema-max-nodes)", lim.maxNodes, lim.maxNodes)
		}
		switch n := v.(type) {
		case map[string]any:
			if len(n) > lim.maxFields {
				return fmt.Errorf("schema has an object of %d members; the limit is %d (MaxSchemaFields, --schema-max-fields)", len(n), lim.maxFields)
			}
			for _, c := range n {
				if err := walk(c); err != nil {
					return err
				}
			}
		case []any:
			if len(n) > lim.maxFields {
				return fmt.Errorf("schema has an array of %d elements; the limit is %d (MaxSchemaFields, --schema-max-fields)", len(n), lim.maxFields)
			}
			for _, c := range n {
				if err := walk(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(doc)
}
