package registry

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Parsing a schema, and checking one against another, costs more than
// linear time in some of its shapes: nesting (a 310 KB schema nested
// 10,000 levels deep took seconds of CPU to parse), wide unions (a union
// of 13,000 records allocated 409 MB to register) and wide records (a
// record of 27,000 fields evolved by one field: 21.7 GB allocated and 24 s
// of CPU in the compatibility check, which matches fields and branches
// pairwise). Every register, lookup and compatibility request parses the
// schema it is sent, as does every node replaying _schemas. So schema text
// is measured before it is parsed — its size, nesting, number of schema
// nodes and the widths of its unions, records and enums — in one pass over
// its JSON tokens that costs no more than reading it, and a schema over
// any limit is refused naming the limit and its flag.

// Defaults of the Config limits. The depth counts JSON objects and arrays:
// a record nested in a record's field is three levels ({ [ {), so 128
// levels allow about 40 nested records, far beyond what people write. A
// record of 2,000 nullable fields is about 8,000 nodes.
const (
	DefaultMaxSchemaBytes   = 1 << 20
	DefaultMaxSchemaDepth   = 128
	DefaultMaxSchemaNodes   = 10000
	DefaultMaxUnionBranches = 500
	DefaultMaxSchemaFields  = 2000
)

// schemaLimits bounds a schema text before it is parsed.
type schemaLimits struct {
	maxBytes    int
	maxDepth    int
	maxNodes    int
	maxBranches int // width of unions, see schemaShape
	maxFields   int // width of records and enums, see schemaShape
}

var defaultLimits = schemaLimits{
	maxBytes: DefaultMaxSchemaBytes, maxDepth: DefaultMaxSchemaDepth, maxNodes: DefaultMaxSchemaNodes,
	maxBranches: DefaultMaxUnionBranches, maxFields: DefaultMaxSchemaFields,
}

// replay returns the limits a node applies to schemas read back from its
// log: size and depth only, the parser's own costs. A schema already
// stored (registered before the width limits existed, or under higher
// ones) must stay readable by id, or records carrying it could not be
// decoded; a wide one costs its parse once per replay, and the checks
// against it are bounded by CheckTimeout.
func (l schemaLimits) replay() schemaLimits {
	l.maxNodes, l.maxBranches, l.maxFields = math.MaxInt, math.MaxInt, math.MaxInt
	return l
}

// check returns an error naming the limit that text exceeds, or nil.
func (l schemaLimits) check(text string) error {
	if len(text) > l.maxBytes {
		return fmt.Errorf("schema is %d bytes long; the limit is %d bytes (MaxSchemaBytes, --schema-max-bytes)", len(text), l.maxBytes)
	}
	sh, deep := measure(text, l.maxDepth)
	switch {
	case deep:
		return fmt.Errorf("schema nests deeper than %d levels of JSON objects and arrays (MaxSchemaDepth, --schema-max-depth)", l.maxDepth)
	case sh.branches() > l.maxBranches:
		return fmt.Errorf("schema's unions are %d branches wide (several unions count as the square root of the sum of their widths squared); the limit is %d (MaxUnionBranches, --schema-max-union-branches)", sh.branches(), l.maxBranches)
	case sh.fields() > l.maxFields:
		return fmt.Errorf("schema's records and enums are %d fields or symbols wide (several count as the square root of the sum of their widths squared); the limit is %d (MaxSchemaFields, --schema-max-fields)", sh.fields(), l.maxFields)
	case sh.nodes > l.maxNodes:
		return fmt.Errorf("schema has %d nodes (types, fields and unions); the limit is %d (MaxSchemaNodes, --schema-max-nodes)", sh.nodes, l.maxNodes)
	}
	return nil
}

// schemaShape is what measure finds in a schema text.
//
// A compatibility check matches a union's branches, a record's fields and
// an enum's symbols pairwise, so its work grows with the square of each
// width: the widths are summed as squares, and their square root is
// compared with the limit. One union of 500 branches and a hundred unions
// of 50 both measure 500.
type schemaShape struct {
	nodes        int
	branchSquare float64 // Σ branches² over unions
	fieldSquare  float64 // Σ width² over records' fields and enums' symbols
}

func (s schemaShape) branches() int { return int(math.Sqrt(s.branchSquare)) }
func (s schemaShape) fields() int   { return int(math.Sqrt(s.fieldSquare)) }

// What a JSON value is, by where it sits in an Avro schema.
type role uint8

const (
	roleData    role = iota // defaults, docs, custom properties: not schema
	roleSchema              // a type: a name, a definition object, or a union
	roleField               // an element of a record's "fields"
	roleFields              // the "fields" array
	roleSymbols             // an enum's "symbols" array
)

// frame is an open JSON object or array.
type frame struct {
	array     bool
	role      role
	n         int    // array elements so far
	key       string // object: the key whose value comes next ("" if none we care about)
	expectKey bool   // object: the next string is a key
}

// childRole is the role of a value inside f.
func (f *frame) childRole() role {
	if f.array {
		switch f.role {
		case roleSchema: // a union's branches are types
			return roleSchema
		case roleFields:
			return roleField
		}
		return roleData
	}
	switch {
	case f.role == roleSchema && (f.key == "type" || f.key == "items" || f.key == "values"):
		return roleSchema
	case f.role == roleSchema && f.key == "fields":
		return roleFields
	case f.role == roleSchema && f.key == "symbols":
		return roleSymbols
	case f.role == roleField && f.key == "type":
		return roleSchema
	}
	return roleData
}

// measure walks text's JSON tokens once and returns its shape, or deep
// when its objects and arrays nest deeper than maxDepth (the walk stops
// there). text need not be valid JSON: the parser that runs afterwards
// judges that; brackets inside strings are ignored.
func measure(text string, maxDepth int) (sh schemaShape, deep bool) {
	var stack []frame
	// value notes a value of role r starting inside the top frame.
	value := func(r role) {
		if r == roleSchema || r == roleField {
			sh.nodes++
		}
		if len(stack) > 0 && stack[len(stack)-1].array {
			stack[len(stack)-1].n++
		}
	}
	roleHere := func() role {
		if len(stack) == 0 {
			return roleSchema
		}
		return stack[len(stack)-1].childRole()
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch c {
		case ' ', '\t', '\n', '\r', ':':
		case ',':
			if len(stack) > 0 && !stack[len(stack)-1].array {
				stack[len(stack)-1].expectKey, stack[len(stack)-1].key = true, ""
			}
		case '{', '[':
			if len(stack) >= maxDepth {
				return sh, true
			}
			r := roleHere()
			value(r)
			stack = append(stack, frame{array: c == '[', role: r, expectKey: c == '{'})
		case '}', ']':
			if len(stack) == 0 {
				continue
			}
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			w := float64(f.n)
			switch {
			case f.array && f.role == roleSchema:
				sh.branchSquare += w * w
			case f.array && (f.role == roleFields || f.role == roleSymbols):
				sh.fieldSquare += w * w
			}
		case '"':
			end := stringEnd(text, i)
			top := len(stack) - 1
			switch {
			case top >= 0 && stack[top].expectKey:
				stack[top].key, stack[top].expectKey = schemaKey(text[i:end]), false
			case top >= 0 && !stack[top].array && stack[top].role == roleSchema && stack[top].key == "type":
				// The kind of a definition ("record"): part of its node.
			default:
				value(roleHere())
			}
			i = end - 1
		default: // a number, true, false, null, or junk: one value
			value(roleHere())
			for i+1 < len(text) && !strings.ContainsRune(" \t\n\r:,{}[]\"", rune(text[i+1])) {
				i++
			}
		}
	}
	return sh, false
}

// stringEnd returns the index just past the JSON string starting at the
// quote text[start], or len(text) if it is not closed.
func stringEnd(text string, start int) int {
	for i := start + 1; i < len(text); i++ {
		switch text[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(text)
}

// schemaKey returns the object key the quoted JSON string raw spells, if
// it is one whose value measure treats apart, else "". Keys spelled with
// escapes count too: the parser decodes them.
func schemaKey(raw string) string {
	if len(raw) > 64 || len(raw) < 2 || raw[len(raw)-1] != '"' {
		return ""
	}
	k := raw[1 : len(raw)-1]
	if strings.IndexByte(k, '\\') >= 0 {
		if json.Unmarshal([]byte(raw), &k) != nil {
			return ""
		}
	}
	switch k {
	case "type", "items", "values", "fields", "symbols":
		return k
	}
	return ""
}
