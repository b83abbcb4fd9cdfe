package transcode

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/schema/internal/jsschema"
)

// How a JSON schema becomes an Avro record. A root that is an object with
// "properties" (and excludes null) is the record; any other root is the
// one field, "value", of a record. Each schema is followed through "$ref"
// (local, or into a reference) and read by its "type":
//
//	object with properties   record; properties in the schema's order,
//	                         named as Avro names must be (other
//	                         characters become _); properties the schema
//	                         does not declare are not carried
//	object without           map of the additionalProperties schema (of
//	properties               JSON text when it has none)
//	array with one "items"   array of the items' type
//	string                   string; format date-time: long
//	                         timestamp-micros; format date: int date
//	integer, number, boolean long, double, boolean
//	anything else: several   string holding the value's JSON text
//	types, no type, a
//	tuple, a schema that
//	holds itself, true/{}
//
// A property is [null, T] (default null) unless it is "required" and its
// type excludes null; an "anyOf"/"oneOf" of null and one schema is that
// schema, nullable. A record is validated against its schema before it is
// converted: one that does not match is refused with the validator's
// reason.

type jsKind int

const (
	jsText jsKind = iota // the value's JSON text
	jsString
	jsLong
	jsDouble
	jsBool
	jsTimestamp
	jsDate
	jsRecord
	jsArray
	jsMap
)

type jsNode struct {
	kind     jsKind
	nullable bool
	fields   []jsField // record
	elem     *jsNode   // array items, map values
}

type jsField struct {
	prop string // the JSON property
	node *jsNode
}

// JSON is a JSON schema compiled for transcoding.
type JSON struct {
	root    *jsNode
	wrapped bool // root is a record of one field, value, holding the whole value
	schema  string
}

// jsCtx is where a schema node sits: the document it is in and its base
// URL, for resolving "$ref"s.
type jsCtx struct {
	doc  any
	base string
}

type jsCompiler struct {
	refs   []jsschema.Ref
	order  KeyOrder
	rootID string
	stack  []string // the "$ref"s being followed: one met again is a cycle
	names  map[string]bool
}

// NewJSON derives the Avro schema of the JSON schema doc with its
// references, all decoded by DecodeSchema into order (nil: properties
// in name order).
func NewJSON(doc any, refs []jsschema.Ref, order KeyOrder) (*JSON, error) {
	c := &jsCompiler{refs: refs, order: order, rootID: jsschema.ID(doc), names: map[string]bool{}}
	at := jsCtx{doc: doc, base: jsschema.URL}
	if c.rootID != "" {
		at.base = c.rootID
	}
	root, err := c.node(doc, at, 0)
	if err != nil {
		return nil, err
	}
	wrapped := root.kind != jsRecord || root.nullable
	if wrapped {
		// Not an object with properties (an open object, an array, a
		// union...): the table has one column, "value", that holds it.
		root = &jsNode{kind: jsRecord, fields: []jsField{{prop: "value", node: root}}}
	}
	name := "Record"
	if m, ok := doc.(map[string]any); ok {
		if t, ok := m["title"].(string); ok && avroName(t) != "_" {
			name = avroName(t)
		}
	}
	t, err := c.avro(root, name)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	return &JSON{root: root, wrapped: wrapped, schema: string(b)}, nil
}

// Schema is the derived Avro schema's JSON.
func (j *JSON) Schema() string { return j.schema }

func (c *jsCompiler) node(s any, at jsCtx, depth int) (*jsNode, error) {
	if depth > maxDepth {
		return &jsNode{kind: jsText, nullable: true}, nil
	}
	m, ok := s.(map[string]any)
	if !ok {
		return &jsNode{kind: jsText, nullable: true}, nil // true, false
	}
	if ref, ok := m["$ref"].(string); ok {
		return c.ref(ref, at, depth)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[k].([]any); ok {
			return c.alternatives(alts, at, depth)
		}
	}
	if all, ok := m["allOf"].([]any); ok && len(all) == 1 && m["type"] == nil && m["properties"] == nil {
		return c.node(all[0], at, depth+1)
	}
	var types []string
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	case nil:
		switch {
		case m["properties"] != nil:
			types = []string{"object"}
		case m["items"] != nil:
			types = []string{"array"}
		default:
			if k := constKind(m); k != "" {
				types = []string{k}
			}
		}
	}
	null := slices.Contains(types, "null")
	types = slices.DeleteFunc(types, func(t string) bool { return t == "null" })
	if len(types) != 1 {
		return &jsNode{kind: jsText, nullable: true}, nil
	}
	n := &jsNode{nullable: null}
	switch types[0] {
	case "string":
		n.kind = jsString
		switch m["format"] {
		case "date-time":
			n.kind = jsTimestamp
		case "date":
			n.kind = jsDate
		}
	case "integer":
		n.kind = jsLong
	case "number":
		n.kind = jsDouble
	case "boolean":
		n.kind = jsBool
	case "array":
		items, ok := m["items"].(map[string]any)
		if !ok {
			return &jsNode{kind: jsText, nullable: true}, nil
		}
		n.kind = jsArray
		e, err := c.node(items, at, depth+1)
		if err != nil {
			return nil, err
		}
		n.elem = e
	case "object":
		props, _ := m["properties"].(map[string]any)
		if len(props) == 0 {
			n.kind = jsMap
			n.elem = &jsNode{kind: jsText, nullable: true}
			if ap, ok := m["additionalProperties"].(map[string]any); ok {
				e, err := c.node(ap, at, depth+1)
				if err != nil {
					return nil, err
				}
				n.elem = e
			}
			return n, nil
		}
		required := map[string]bool{}
		if rs, ok := m["required"].([]any); ok {
			for _, r := range rs {
				if s, ok := r.(string); ok {
					required[s] = true
				}
			}
		}
		n.kind = jsRecord
		names, ok := c.order.Keys(props)
		if !ok {
			names = slices.Sorted(mapKeys(props))
		}
		for _, p := range names {
			f, err := c.node(props[p], at, depth+1)
			if err != nil {
				return nil, err
			}
			if !required[p] && !f.nullable {
				g := *f
				g.nullable = true
				f = &g
			}
			n.fields = append(n.fields, jsField{prop: p, node: f})
		}
	default:
		return &jsNode{kind: jsText, nullable: true}, nil
	}
	return n, nil
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// constKind is the type of an untyped "enum" or "const" whose values
// are all of one.
func constKind(m map[string]any) string {
	var vals []any
	if e, ok := m["enum"].([]any); ok {
		vals = e
	} else if v, ok := m["const"]; ok {
		vals = []any{v}
	}
	kind := ""
	for _, v := range vals {
		k := ""
		switch v.(type) {
		case string:
			k = "string"
		case bool:
			k = "boolean"
		default:
			return ""
		}
		if kind != "" && k != kind {
			return ""
		}
		kind = k
	}
	return kind
}

// alternatives maps an anyOf/oneOf: null and one schema is that schema,
// nullable; anything else is JSON text.
func (c *jsCompiler) alternatives(alts []any, at jsCtx, depth int) (*jsNode, error) {
	var one *jsNode
	null := false
	for _, a := range alts {
		if m, ok := a.(map[string]any); ok && m["type"] == "null" && len(m) == 1 {
			null = true
			continue
		}
		if one != nil {
			return &jsNode{kind: jsText, nullable: true}, nil
		}
		n, err := c.node(a, at, depth+1)
		if err != nil {
			return nil, err
		}
		one = n
	}
	if one == nil {
		return &jsNode{kind: jsText, nullable: true}, nil
	}
	if null && !one.nullable {
		g := *one
		g.nullable = true
		one = &g
	}
	return one, nil
}

// ref follows a "$ref": a JSON pointer into the current document, or into
// a reference by its name. A "$ref" met again while being followed is a
// schema that holds itself: JSON text, since a table's columns are fixed.
// So is one this cannot follow (an anchor, a draft's metaschema, the
// root by its "$id"): the validator has followed it, and the value's JSON
// text loses nothing.
func (c *jsCompiler) ref(ref string, at jsCtx, depth int) (*jsNode, error) {
	text := &jsNode{kind: jsText, nullable: true}
	target, frag, _ := strings.Cut(ref, "#")
	next := at
	if target != "" {
		r, ok := jsschema.Find(c.refs, c.rootID, at.base, target)
		if !ok {
			return text, nil
		}
		next = jsCtx{doc: r.Doc, base: jsschema.ResolveURL(jsschema.URL, r.Name)}
	}
	key := next.base + "#" + frag
	if slices.Contains(c.stack, key) {
		return text, nil
	}
	s, err := pointer(next.doc, frag)
	if err != nil {
		return text, nil
	}
	c.stack = append(c.stack, key)
	defer func() { c.stack = c.stack[:len(c.stack)-1] }()
	return c.node(s, next, depth+1)
}

// pointer resolves a JSON pointer (RFC 6901, as a URI fragment).
func pointer(doc any, frag string) (any, error) {
	if frag == "" {
		return doc, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, fmt.Errorf("only JSON pointers are followed, not anchors (%q)", frag)
	}
	v := doc
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := v.(type) {
		case map[string]any:
			c, ok := n[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q", tok)
			}
			v = c
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil, fmt.Errorf("no element %q", tok)
			}
			v = n[i]
		default:
			return nil, fmt.Errorf("%q is below a scalar", tok)
		}
	}
	return v, nil
}
