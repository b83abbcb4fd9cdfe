package registry

import "fmt"

// Parsing a schema costs more than linear time in its nesting depth (a
// 310 KB schema nested 10,000 levels deep took seconds of CPU), and every
// register, lookup and compatibility request parses the schema it is sent,
// as does every node replaying _schemas. So schema text is measured before
// it is parsed: its size, and how deep its JSON nests, in one pass that
// costs no more than reading it.

// Defaults of Config.MaxSchemaBytes and Config.MaxSchemaDepth. The depth
// counts JSON objects and arrays: a record nested in a record's field is
// three levels ({ [ {), so 128 levels allow about 40 nested records, far
// beyond what people write.
const (
	DefaultMaxSchemaBytes = 1 << 20
	DefaultMaxSchemaDepth = 128
)

// schemaLimits bounds a schema text before it is parsed.
type schemaLimits struct {
	maxBytes int
	maxDepth int
}

var defaultLimits = schemaLimits{maxBytes: DefaultMaxSchemaBytes, maxDepth: DefaultMaxSchemaDepth}

// check returns an error naming the limit that text exceeds, or nil.
func (l schemaLimits) check(text string) error {
	if len(text) > l.maxBytes {
		return fmt.Errorf("schema is %d bytes long; the limit is %d bytes (MaxSchemaBytes, --schema-max-bytes)", len(text), l.maxBytes)
	}
	if jsonDeeperThan(text, l.maxDepth) {
		return fmt.Errorf("schema nests deeper than %d levels of JSON objects and arrays (MaxSchemaDepth, --schema-max-depth)", l.maxDepth)
	}
	return nil
}

// jsonDeeperThan reports whether the objects and arrays of text nest
// deeper than limit, ignoring brackets inside strings. text need not be
// valid JSON: the parser that runs afterwards judges that.
func jsonDeeperThan(text string, limit int) bool {
	depth := 0
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}
