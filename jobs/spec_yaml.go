package jobs

// The YAML side of spec files: the value types a spec is written in and
// the strict decoder that refuses unknown keys (suggesting the closest
// known one), kept apart from what a spec means (spec.go).

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/tributary-io/tributary/loader"
	"go.yaml.in/yaml/v3"
)

// List is a list of strings, written as a YAML list or a comma-separated
// string.
type List []string

func (l *List) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		var s []string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*l = s
	case yaml.ScalarNode:
		*l = nil
		for _, p := range strings.Split(n.Value, ",") {
			if p = strings.TrimSpace(p); p != "" {
				*l = append(*l, p)
			}
		}
	default:
		return errors.New("want a list or a comma-separated string")
	}
	return nil
}

// Topics selects topics: a list of names, or a regular expression
// matching whole names.
type Topics struct {
	Names []string
	Regex string
}

func (t *Topics) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		return n.Decode(&t.Names)
	case yaml.ScalarNode:
		if _, err := regexp.Compile("^(?:" + n.Value + ")$"); err != nil {
			return fmt.Errorf("not a valid regular expression: %w", err)
		}
		t.Regex = n.Value
		return nil
	}
	return errors.New("want a list of topic names or a regular expression")
}

func (t Topics) String() string {
	if t.Regex != "" {
		return "/" + t.Regex + "/"
	}
	return strings.Join(t.Names, ",")
}

// Duration is a Go duration written as a string: 90s, 15m, 1h30m.
type Duration time.Duration

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration (examples: 90s, 15m, 1h30m)", n.Value)
	}
	*d = Duration(v)
	return nil
}

// Size is a byte count written as 134217728, 128MiB or 64MB.
type Size int64

func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := loader.ParseBytes(n.Value)
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// decodeStrict decodes a mapping node into a struct field by field, so that
// an unknown field and a value of the wrong kind are both reported with the
// field's name and line (yaml.v3's own messages name neither well).
func decodeStrict(file, prefix string, n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		where := "the spec"
		if prefix != "" {
			where = strings.TrimSuffix(prefix, ".")
		}
		return &SpecError{File: file, Line: n.Line, Msg: where + " must be a mapping of field: value"}
	}
	t := v.Type()
	fields := map[string]int{}
	var names []string
	for i := range t.NumField() {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" {
			fields[tag] = i
			names = append(names, tag)
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		path := prefix + k.Value
		idx, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("unknown field %q", path)
			if s := closest(k.Value, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", prefix+s)
			}
			return &SpecError{File: file, Line: k.Line, Msg: msg + "; fields here are " + strings.Join(sortedCopy(names), ", ")}
		}
		if seen[k.Value] {
			return &SpecError{File: file, Line: k.Line, Field: path, Msg: "given twice"}
		}
		seen[k.Value] = true
		fv := v.Field(idx)
		if fv.Kind() == reflect.Struct && !isLeaf(fv) {
			if err := decodeStrict(file, path+".", val, fv); err != nil {
				return err
			}
			continue
		}
		if err := val.Decode(fv.Addr().Interface()); err != nil {
			msg := err.Error()
			var te *yaml.TypeError
			if errors.As(err, &te) && len(te.Errors) > 0 {
				msg = te.Errors[0]
				if _, after, found := strings.Cut(msg, ": "); found && strings.HasPrefix(msg, "line ") {
					msg = after
				}
			}
			return &SpecError{File: file, Line: val.Line, Field: path, Msg: msg}
		}
	}
	return nil
}

// isLeaf tells structs decoded as one value (Topics) from sections.
func isLeaf(v reflect.Value) bool {
	_, ok := v.Addr().Interface().(yaml.Unmarshaler)
	return ok
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

// closest returns the known name nearest to s, if it is near enough to be
// a typo.
func closest(s string, names []string) string {
	best, bestD := "", 1<<30
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), n); d < bestD {
			best, bestD = n, d
		}
	}
	if bestD <= max(2, len(s)/3) {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
