package loader

// Shredding: a decoded Avro value becomes the column values, with their
// repetition and definition levels, of the node parquet_schema.go built.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/parquet-go/parquet-go"
)

// shred appends v's values to cols: rep and def are the repetition and
// definition levels of the node's context.
func (n *pqNode) shred(v any, rep, def int, cols [][]parquet.Value) error {
	if n.nullable && v != nil {
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return fmt.Errorf("union: %T", v)
		}
		for _, x := range m {
			v = x
		}
	}
	if v == nil {
		if !n.optional {
			return fmt.Errorf("null in a field that is not nullable")
		}
		n.nulls(rep, def, cols)
		return nil
	}
	if n.optional {
		def++
	}
	switch n.kind {
	case pqLeaf:
		pv, err := n.leaf(v)
		if err != nil {
			return err
		}
		cols[n.col] = append(cols[n.col], pv.Level(rep, def, n.col))
	case pqGroup:
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("record: %T", v)
		}
		if n.union {
			// A branch key that names no member would write the value as
			// null in every member: lost without a word.
			for k := range m {
				if len(m) != 1 || !slices.Contains(n.names, k) {
					return fmt.Errorf("union value %v: want one of the branches %v", slices.Collect(maps.Keys(m)), n.names)
				}
			}
		}
		for i, f := range n.fields {
			if err := f.shred(m[n.names[i]], rep, def, cols); err != nil {
				return fmt.Errorf("%s: %w", n.names[i], err)
			}
		}
	case pqList:
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("array: %T", v)
		}
		if len(items) == 0 {
			n.nulls(rep, def, cols)
			return nil
		}
		for i, it := range items {
			if i > 0 {
				rep = n.rep
			}
			if err := n.elem.shred(it, rep, def+1, cols); err != nil {
				return err
			}
		}
	case pqMap:
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("map: %T", v)
		}
		if len(m) == 0 {
			n.nulls(rep, def, cols)
			return nil
		}
		i := 0
		for k, x := range m {
			if i > 0 {
				rep = n.rep
			}
			i++
			cols[n.first] = append(cols[n.first], parquet.ByteArrayValue([]byte(k)).Level(rep, def+1, n.first))
			if err := n.elem.shred(x, rep, def+1, cols); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
		}
	}
	return nil
}

// nulls writes an absent value (or an empty list or map) into every
// column under n.
func (n *pqNode) nulls(rep, def int, cols [][]parquet.Value) {
	for c := n.first; c <= n.last; c++ {
		cols[c] = append(cols[c], parquet.NullValue().Level(rep, def, c))
	}
}
