package loader

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/parquet-go/parquet-go"
)

// How an Avro schema becomes a Parquet schema, the way Spark, Hive and
// Iceberg expect to find one:
//
//	record                  group, fields by name
//	[null, T] (either order) optional T
//	other unions            group of optional member0, member1, ... (the
//	                        non-null branches in order, as spark-avro names
//	                        them); optional when null is a branch
//	array                   LIST (3-level: list.element)
//	map                     MAP (key_value.key string, key_value.value)
//	enum, string            STRING
//	uuid                    UUID (16-byte fixed)
//	fixed                   fixed_len_byte_array of its size
//	int / date / time-millis INT32 / DATE / TIME(ms)
//	long / timestamp-millis, -micros, local-timestamp-* / time-micros
//	                        INT64 / TIMESTAMP (UTC adjusted, or not for local-) / TIME(us)
//	decimal (bytes, fixed)  DECIMAL on a fixed_len_byte_array: the fixed's
//	                        size, or the fewest bytes that hold the precision
//
// A pqNode is the compiled form: the Parquet node, and how a value in
// goavro's native form (schema.Deserializer) is shredded into the row's
// columns with their repetition and definition levels (Dremel).
type pqNode struct {
	node     parquet.Node
	optional bool

	kind     pqKind
	fields   []*pqNode // group: in the Parquet node's (sorted) field order
	names    []string  // group: field names; for unions the goavro branch keys
	elem     *pqNode   // list element, map value
	leaf     func(any) (parquet.Value, error)
	first    int // first leaf column under the node
	last     int // last leaf column under the node
	rep      int // list and map: the repetition level of their repeated group
	col      int // leaf: its column
	union    bool
	nullable bool // a [null, T] union: the native value is nil or {branch: v}
}

type pqKind int

const (
	pqLeaf pqKind = iota
	pqGroup
	pqList
	pqMap
)

// parquetSchema compiles an Avro schema for Parquet files.
func parquetSchema(s avro.Schema) (*parquet.Schema, *pqNode, error) {
	return parquetSchemaWith(s, nil)
}

// parquetSchemaWith is parquetSchema with more columns: extend adds them
// to the compiled root before columns are numbered.
func parquetSchemaWith(s avro.Schema, extend func(root *pqNode) error) (*parquet.Schema, *pqNode, error) {
	root, err := pqCompile(s, "", map[string]bool{})
	if err != nil {
		return nil, nil, err
	}
	if root.kind != pqGroup || root.union {
		return nil, nil, fmt.Errorf("a Parquet file holds records: the schema is a %s", s.Type())
	}
	if extend != nil {
		if err := extend(root); err != nil {
			return nil, nil, err
		}
	}
	name := "record"
	if n, ok := s.(avro.NamedSchema); ok {
		name = n.Name()
	}
	ps := parquet.NewSchema(name, root.node)
	col := 0
	root.number(&col, 0)
	return ps, root, nil
}

// number gives each leaf its column (in the order of the Parquet node's
// fields, which is also the order of pqNode.fields) and each repeated node
// its repetition level.
func (n *pqNode) number(col *int, rep int) {
	n.first = *col
	switch n.kind {
	case pqLeaf:
		n.col = *col
		*col++
	case pqGroup:
		for _, f := range n.fields {
			f.number(col, rep)
		}
	case pqList, pqMap:
		n.rep = rep + 1
		if n.kind == pqMap {
			*col++ // the key
		}
		n.elem.number(col, rep+1)
	}
	n.last = *col - 1
}

// open holds the records being compiled: a record that holds itself (a
// linked list, a tree) has no Parquet form, whose nesting is fixed.
func pqCompile(s avro.Schema, path string, open map[string]bool) (*pqNode, error) {
	switch t := s.(type) {
	case *avro.RefSchema:
		return pqCompile(t.Schema(), path, open)
	case *avro.RecordSchema:
		if open[t.FullName()] {
			return nil, fmt.Errorf("field %s: record %s contains itself, which Parquet's fixed nesting cannot hold", strings.TrimPrefix(path, "."), t.FullName())
		}
		open[t.FullName()] = true
		defer delete(open, t.FullName())
		g := parquet.Group{}
		byName := map[string]*pqNode{}
		for _, f := range t.Fields() {
			c, err := pqCompile(f.Type(), path+"."+f.Name(), open)
			if err != nil {
				return nil, err
			}
			g[f.Name()] = c.node
			byName[f.Name()] = c
		}
		og := orderedGroup{Group: g}
		for _, f := range t.Fields() {
			og.order = append(og.order, f.Name())
		}
		n := &pqNode{node: og, kind: pqGroup}
		for _, f := range og.Fields() {
			n.fields = append(n.fields, byName[f.Name()])
			n.names = append(n.names, f.Name())
		}
		return n, nil
	case *avro.UnionSchema:
		return pqUnion(t, path, open)
	case *avro.ArraySchema:
		e, err := pqCompile(t.Items(), path+"[]", open)
		if err != nil {
			return nil, err
		}
		return &pqNode{node: parquet.List(e.node), kind: pqList, elem: e}, nil
	case *avro.MapSchema:
		v, err := pqCompile(t.Values(), path+"{}", open)
		if err != nil {
			return nil, err
		}
		return &pqNode{node: parquet.Map(parquet.String(), v.node), kind: pqMap, elem: v}, nil
	case *avro.EnumSchema:
		return pqLeafNode(parquet.String(), func(v any) (parquet.Value, error) {
			s, ok := v.(string)
			if !ok {
				return parquet.Value{}, fmt.Errorf("enum: %T", v)
			}
			return parquet.ByteArrayValue([]byte(s)), nil
		}), nil
	case *avro.FixedSchema:
		if d, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			return pqDecimal(d.Precision(), d.Scale(), t.Size()), nil
		}
		size := t.Size()
		return pqLeafNode(parquet.Leaf(parquet.FixedLenByteArrayType(size)), func(v any) (parquet.Value, error) {
			b, ok := v.([]byte)
			if !ok || len(b) != size {
				return parquet.Value{}, fmt.Errorf("fixed(%d): %T", size, v)
			}
			return parquet.FixedLenByteArrayValue(b), nil
		}), nil
	case *avro.PrimitiveSchema:
		return pqPrimitive(t, path)
	case *avro.NullSchema:
		return nil, fmt.Errorf("field %s: a field that is always null has no Parquet type", strings.TrimPrefix(path, "."))
	}
	return nil, fmt.Errorf("field %s: Avro type %s has no Parquet mapping", strings.TrimPrefix(path, "."), s.Type())
}

func pqLeafNode(node parquet.Node, conv func(any) (parquet.Value, error)) *pqNode {
	return &pqNode{node: node, kind: pqLeaf, leaf: conv}
}

func pqUnion(u *avro.UnionSchema, path string, open map[string]bool) (*pqNode, error) {
	var branches []avro.Schema
	hasNull := false
	for _, b := range u.Types() {
		if b.Type() == avro.Null {
			hasNull = true
			continue
		}
		branches = append(branches, b)
	}
	if len(branches) == 0 {
		return nil, fmt.Errorf("field %s: a union of null alone has no Parquet type", strings.TrimPrefix(path, "."))
	}
	if len(branches) == 1 {
		n, err := pqCompile(branches[0], path, open)
		if err != nil {
			return nil, err
		}
		c := *n
		if hasNull {
			c.node, c.optional, c.nullable = parquet.Optional(n.node), true, true
		}
		return &c, nil
	}
	g := parquet.Group{}
	byName := map[string]*pqNode{}
	keys := map[string]string{}
	for i, b := range branches {
		c, err := pqCompile(b, fmt.Sprintf("%s.member%d", path, i), open)
		if err != nil {
			return nil, err
		}
		c.node, c.optional = parquet.Optional(c.node), true
		name := fmt.Sprintf("member%d", i)
		g[name] = c.node
		byName[name] = c
		keys[name] = goavroBranch(b)
	}
	n := &pqNode{node: g, kind: pqGroup, union: true}
	if hasNull {
		n.node, n.optional = parquet.Optional(g), true
	}
	for _, f := range g.Fields() {
		n.fields = append(n.fields, byName[f.Name()])
		n.names = append(n.names, keys[f.Name()])
	}
	return n, nil
}

// orderedGroup is a Parquet group whose fields keep the Avro record's
// order (parquet.Group sorts them by name), so that readers show columns
// as the schema declares them.
type orderedGroup struct {
	parquet.Group
	order []string
}

func (g orderedGroup) Fields() []parquet.Field {
	byName := map[string]parquet.Field{}
	for _, f := range g.Group.Fields() {
		byName[f.Name()] = f
	}
	out := make([]parquet.Field, len(g.order))
	for i, name := range g.order {
		out[i] = byName[name]
	}
	return out
}

// goavroBranch is the key goavro's native form gives a union branch.
func goavroBranch(s avro.Schema) string {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	if p, ok := s.(*avro.PrimitiveSchema); ok && p.Logical() != nil {
		// goavro keys the logical types it decodes as type.logicalType;
		// others (uuid, local-timestamp-*) by their base type.
		key := string(p.Type()) + "." + string(p.Logical().Type())
		switch key {
		case "long.timestamp-millis", "long.timestamp-micros", "int.time-millis", "long.time-micros", "int.date", "bytes.decimal":
			return key
		}
	}
	return string(s.Type())
}

func pqPrimitive(t *avro.PrimitiveSchema, path string) (*pqNode, error) {
	var lt avro.LogicalType
	if l := t.Logical(); l != nil {
		lt = l.Type()
	}
	switch t.Type() {
	case avro.Boolean:
		return pqLeafNode(parquet.Leaf(parquet.BooleanType), func(v any) (parquet.Value, error) {
			b, ok := v.(bool)
			if !ok {
				return parquet.Value{}, fmt.Errorf("boolean: %T", v)
			}
			return parquet.BooleanValue(b), nil
		}), nil
	case avro.Int:
		node := parquet.Int(32)
		switch lt {
		case avro.Date:
			node = parquet.Date()
		case avro.TimeMillis:
			node = parquet.Time(parquet.Millisecond)
		}
		return pqLeafNode(node, func(v any) (parquet.Value, error) {
			switch x := v.(type) {
			case int32:
				return parquet.Int32Value(x), nil
			case time.Time: // date
				return parquet.Int32Value(int32(floorDiv(x.Unix(), 86400))), nil
			case time.Duration: // time-millis
				return parquet.Int32Value(int32(x.Milliseconds())), nil
			}
			return parquet.Value{}, fmt.Errorf("int: %T", v)
		}), nil
	case avro.Long:
		node, unit := parquet.Int(64), time.Duration(0)
		switch lt {
		case avro.TimestampMillis:
			node, unit = parquet.Timestamp(parquet.Millisecond), time.Millisecond
		case avro.TimestampMicros:
			node, unit = parquet.Timestamp(parquet.Microsecond), time.Microsecond
		case avro.LocalTimestampMillis:
			node, unit = parquet.TimestampAdjusted(parquet.Millisecond, false), time.Millisecond
		case avro.LocalTimestampMicros:
			node, unit = parquet.TimestampAdjusted(parquet.Microsecond, false), time.Microsecond
		case avro.TimeMicros:
			node, unit = parquet.Time(parquet.Microsecond), time.Microsecond
		}
		return pqLeafNode(node, func(v any) (parquet.Value, error) {
			switch x := v.(type) {
			case int64:
				return parquet.Int64Value(x), nil
			case time.Time:
				if unit == time.Microsecond {
					return parquet.Int64Value(x.UnixMicro()), nil
				}
				return parquet.Int64Value(x.UnixMilli()), nil
			case time.Duration:
				return parquet.Int64Value(int64(x / time.Microsecond)), nil
			}
			return parquet.Value{}, fmt.Errorf("long: %T", v)
		}), nil
	case avro.Float:
		return pqLeafNode(parquet.Leaf(parquet.FloatType), func(v any) (parquet.Value, error) {
			f, ok := v.(float32)
			if !ok {
				return parquet.Value{}, fmt.Errorf("float: %T", v)
			}
			return parquet.FloatValue(f), nil
		}), nil
	case avro.Double:
		return pqLeafNode(parquet.Leaf(parquet.DoubleType), func(v any) (parquet.Value, error) {
			f, ok := v.(float64)
			if !ok {
				return parquet.Value{}, fmt.Errorf("double: %T", v)
			}
			return parquet.DoubleValue(f), nil
		}), nil
	case avro.Bytes:
		if d, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			return pqDecimal(d.Precision(), d.Scale(), decimalBytes(d.Precision())), nil
		}
		return pqLeafNode(parquet.Leaf(parquet.ByteArrayType), func(v any) (parquet.Value, error) {
			b, ok := v.([]byte)
			if !ok {
				return parquet.Value{}, fmt.Errorf("bytes: %T", v)
			}
			return parquet.ByteArrayValue(b), nil
		}), nil
	case avro.String:
		if lt == avro.UUID {
			return pqLeafNode(parquet.UUID(), func(v any) (parquet.Value, error) {
				s, ok := v.(string)
				if !ok {
					return parquet.Value{}, fmt.Errorf("uuid: %T", v)
				}
				u, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
				if err != nil || len(u) != 16 || len(s) != 36 {
					return parquet.Value{}, fmt.Errorf("uuid %q is not in the 8-4-4-4-12 hex form", s)
				}
				return parquet.FixedLenByteArrayValue(u), nil
			}), nil
		}
		return pqLeafNode(parquet.String(), func(v any) (parquet.Value, error) {
			s, ok := v.(string)
			if !ok {
				return parquet.Value{}, fmt.Errorf("string: %T", v)
			}
			return parquet.ByteArrayValue([]byte(s)), nil
		}), nil
	}
	return nil, fmt.Errorf("field %s: Avro type %s has no Parquet mapping", strings.TrimPrefix(path, "."), t.Type())
}

// decimalBytes is the fewest bytes whose two's complement holds every
// unscaled value of precision digits, as Spark and Iceberg size them.
func decimalBytes(precision int) int {
	max := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	max.Sub(max, big.NewInt(1))
	return (max.BitLen() + 1 + 7) / 8 // +1: the sign bit
}

func pqDecimal(precision, scale, size int) *pqNode {
	mul := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	return pqLeafNode(parquet.Decimal(scale, precision, parquet.FixedLenByteArrayType(size)), func(v any) (parquet.Value, error) {
		r, ok := v.(*big.Rat)
		if !ok {
			return parquet.Value{}, fmt.Errorf("decimal: %T", v)
		}
		n := new(big.Rat).Mul(r, new(big.Rat).SetInt(mul))
		if !n.IsInt() {
			return parquet.Value{}, fmt.Errorf("decimal %s has more than %d digits after the point", r.FloatString(scale+2), scale)
		}
		// A body may hold more digits than the schema's precision (Avro
		// decoders do not check); they would not fit the column.
		if n.Num().BitLen()+1 > 8*size || new(big.Int).Abs(n.Num()).Cmp(limit) >= 0 {
			return parquet.Value{}, fmt.Errorf("decimal %s has more than the %d digits of its precision", r.FloatString(scale), precision)
		}
		return parquet.FixedLenByteArrayValue(twosComplement(n.Num(), size)), nil
	})
}

// twosComplement writes x big-endian in size bytes, sign-extended.
func twosComplement(x *big.Int, size int) []byte {
	out := make([]byte, size)
	if x.Sign() >= 0 {
		x.FillBytes(out)
		return out
	}
	// -x = ^(x-1): write x-1's magnitude and invert every byte.
	m := new(big.Int).Neg(x)
	m.Sub(m, big.NewInt(1))
	m.FillBytes(out)
	for i := range out {
		out[i] = ^out[i]
	}
	return out
}
