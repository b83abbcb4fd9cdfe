package loader

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/parquet-go/parquet-go"
)

// An Iceberg table's schema is the topic's table schema (the latest
// registered Avro schema, parquet.go) in Iceberg's types, plus the event
// time column the table is partitioned by. Column ids are Iceberg's
// identity of a column across schema versions: a column keeps its id
// while its name path and kind stay, a new one gets the next id, and a
// column whose type changes beyond Iceberg's promotions (int to long,
// float to double, wider decimal precision) fails the run, since files
// already committed could no longer be read in the new type.
//
// Every column is optional: Iceberg v2 has no column defaults, so a column
// added later must read as null in files written before it (files written
// after it hold the Avro default, since records are resolved to the table
// schema). The Parquet files carry no field ids; the table's name mapping
// (schema.name-mapping.default) maps their columns to ids by name, as
// Iceberg does for files it did not write.

// eventTimeColumn is the column, appended to every table's Parquet files,
// holding each record's event time (the header's time, or the record's
// timestamp when it has no header) as a UTC timestamp in microseconds: the
// source of the table's hour partitions. Iceberg's hour transform takes
// timestamps only, and the header's time is an Avro long.
const eventTimeColumn = "_event_time"

// icePartitionField is the id of the table's only partition field,
// hour(_event_time); Iceberg numbers partition fields from 1000.
const icePartitionField = 1000

type iceField struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Required bool   `json:"required"`
	Type     any    `json:"type"`
	Doc      string `json:"doc,omitempty"`
}

type iceStruct struct {
	Type   string     `json:"type"` // "struct"
	Fields []iceField `json:"fields"`
}

type iceList struct {
	Type            string `json:"type"` // "list"
	ElementID       int    `json:"element-id"`
	Element         any    `json:"element"`
	ElementRequired bool   `json:"element-required"`
}

type iceMap struct {
	Type          string `json:"type"` // "map"
	KeyID         int    `json:"key-id"`
	Key           any    `json:"key"`
	ValueID       int    `json:"value-id"`
	Value         any    `json:"value"`
	ValueRequired bool   `json:"value-required"`
}

// iceSchema is one schema of a table's metadata.
type iceSchema struct {
	Type     string     `json:"type"` // "struct"
	SchemaID int        `json:"schema-id"`
	Fields   []iceField `json:"fields"`
}

// iceColumn is what an existing schema says of a column path.
type iceColumn struct {
	id   int
	kind string // a primitive's type, or struct, list, map
}

// iceIDs assigns column ids: the previous schema's where a path keeps its
// kind, new ones above last otherwise.
type iceIDs struct {
	prev map[string]iceColumn
	last int
}

// columns indexes a schema (as decoded from JSON) by column path.
func iceColumns(fields []iceField) (map[string]iceColumn, error) {
	out := map[string]iceColumn{}
	var walk func(prefix string, t any) error
	walk = func(prefix string, t any) error {
		switch x := t.(type) {
		case string:
			return nil
		case map[string]any:
			kind, _ := x["type"].(string)
			switch kind {
			case "struct":
				fs, _ := x["fields"].([]any)
				for _, f := range fs {
					fm, _ := f.(map[string]any)
					name, _ := fm["name"].(string)
					id, _ := fm["id"].(float64)
					out[prefix+"."+name] = iceColumn{id: int(id), kind: iceKind(fm["type"])}
					if err := walk(prefix+"."+name, fm["type"]); err != nil {
						return err
					}
				}
			case "list":
				id, _ := x["element-id"].(float64)
				out[prefix+".element"] = iceColumn{id: int(id), kind: iceKind(x["element"])}
				return walk(prefix+".element", x["element"])
			case "map":
				kid, _ := x["key-id"].(float64)
				vid, _ := x["value-id"].(float64)
				out[prefix+".key"] = iceColumn{id: int(kid), kind: iceKind(x["key"])}
				out[prefix+".value"] = iceColumn{id: int(vid), kind: iceKind(x["value"])}
				return walk(prefix+".value", x["value"])
			default:
				return fmt.Errorf("column %s: type %q", strings.TrimPrefix(prefix, "."), kind)
			}
		}
		return nil
	}
	for _, f := range fields {
		// Round-trip through JSON so that schemas built here and schemas
		// read from metadata are walked alike.
		data, err := json.Marshal(f.Type)
		if err != nil {
			return nil, err
		}
		var t any
		if err := json.Unmarshal(data, &t); err != nil {
			return nil, err
		}
		out["."+f.Name] = iceColumn{id: f.ID, kind: iceKind(t)}
		if err := walk("."+f.Name, t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func iceKind(t any) string {
	switch x := t.(type) {
	case string:
		return x
	case map[string]any:
		k, _ := x["type"].(string)
		return k
	}
	// A type built here: its JSON form says. Anything else (null, a
	// number: a damaged schema) has no kind.
	data, _ := json.Marshal(t)
	var generic any
	json.Unmarshal(data, &generic)
	switch generic.(type) {
	case string, map[string]any:
		return iceKind(generic)
	}
	return ""
}

// promotes reports whether Iceberg reads a column of kind from as kind to.
func icePromotes(from, to string) bool {
	if from == to {
		return true
	}
	switch {
	case from == "int" && to == "long", from == "float" && to == "double":
		return true
	case strings.HasPrefix(from, "decimal(") && strings.HasPrefix(to, "decimal("):
		var p1, s1, p2, s2 int
		fmt.Sscanf(from, "decimal(%d, %d)", &p1, &s1)
		fmt.Sscanf(to, "decimal(%d, %d)", &p2, &s2)
		return s1 == s2 && p2 >= p1
	}
	return false
}

func (ids *iceIDs) id(path, kind string) (int, error) {
	if c, ok := ids.prev[path]; ok {
		if !icePromotes(c.kind, kind) {
			return 0, fmt.Errorf("column %s is %s in the table; the new schema makes it %s, which Iceberg cannot read its files as",
				strings.TrimPrefix(path, "."), c.kind, kind)
		}
		return c.id, nil
	}
	ids.last++
	return ids.last, nil
}

// icebergSchema converts an Avro record schema (the topic's table schema)
// to the fields of an Iceberg schema, with the event time column last.
// prev is the table's current schema's fields (nil for a new table) and
// lastID its last column id; it returns the new last column id.
func icebergSchema(s avro.Schema, prev []iceField, lastID int) ([]iceField, int, error) {
	rs, ok := s.(*avro.RecordSchema)
	if !ok {
		return nil, 0, fmt.Errorf("a table holds records: the schema is a %s", s.Type())
	}
	cols, err := iceColumns(prev)
	if err != nil {
		return nil, 0, fmt.Errorf("the table's current schema: %w", err)
	}
	ids := &iceIDs{prev: cols, last: lastID}
	var fields []iceField
	for _, f := range rs.Fields() {
		if f.Name() == eventTimeColumn {
			return nil, 0, fmt.Errorf("field %s: the name is the table's event time column", f.Name())
		}
		fld, err := ids.field("."+f.Name(), f.Name(), f.Type(), f.Doc())
		if err != nil {
			return nil, 0, err
		}
		fields = append(fields, fld)
	}
	id, err := ids.id("."+eventTimeColumn, "timestamptz")
	if err != nil {
		return nil, 0, err
	}
	fields = append(fields, iceField{ID: id, Name: eventTimeColumn, Type: "timestamptz",
		Doc: "the event's time (its header's time), the source of the hour partitions"})
	return fields, ids.last, nil
}

func (ids *iceIDs) field(path, name string, s avro.Schema, doc string) (iceField, error) {
	t, kind, err := ids.typ(path, s)
	if err != nil {
		return iceField{}, err
	}
	id, err := ids.id(path, kind)
	if err != nil {
		return iceField{}, err
	}
	return iceField{ID: id, Name: name, Type: t, Doc: doc}, nil
}

// typ converts one Avro type, as parquet_schema.go lays it out in Parquet.
// Nested ids are taken before the column's own only for new columns; an
// existing column keeps its id whatever order they are taken in.
func (ids *iceIDs) typ(path string, s avro.Schema) (any, string, error) {
	switch t := s.(type) {
	case *avro.RefSchema:
		return ids.typ(path, t.Schema())
	case *avro.RecordSchema:
		st := iceStruct{Type: "struct"}
		for _, f := range t.Fields() {
			fld, err := ids.field(path+"."+f.Name(), f.Name(), f.Type(), f.Doc())
			if err != nil {
				return nil, "", err
			}
			st.Fields = append(st.Fields, fld)
		}
		return st, "struct", nil
	case *avro.UnionSchema:
		var branches []avro.Schema
		for _, b := range t.Types() {
			if b.Type() != avro.Null {
				branches = append(branches, b)
			}
		}
		if len(branches) == 1 {
			return ids.typ(path, branches[0])
		}
		st := iceStruct{Type: "struct"}
		for i, b := range branches {
			name := fmt.Sprintf("member%d", i)
			fld, err := ids.field(path+"."+name, name, b, "")
			if err != nil {
				return nil, "", err
			}
			st.Fields = append(st.Fields, fld)
		}
		return st, "struct", nil
	case *avro.ArraySchema:
		e, ek, err := ids.typ(path+".element", t.Items())
		if err != nil {
			return nil, "", err
		}
		id, err := ids.id(path+".element", ek)
		if err != nil {
			return nil, "", err
		}
		return iceList{Type: "list", ElementID: id, Element: e}, "list", nil
	case *avro.MapSchema:
		kid, err := ids.id(path+".key", "string")
		if err != nil {
			return nil, "", err
		}
		v, vk, err := ids.typ(path+".value", t.Values())
		if err != nil {
			return nil, "", err
		}
		vid, err := ids.id(path+".value", vk)
		if err != nil {
			return nil, "", err
		}
		return iceMap{Type: "map", KeyID: kid, Key: "string", ValueID: vid, Value: v}, "map", nil
	case *avro.EnumSchema:
		return "string", "string", nil
	case *avro.FixedSchema:
		if d, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			k := fmt.Sprintf("decimal(%d, %d)", d.Precision(), d.Scale())
			return k, k, nil
		}
		k := fmt.Sprintf("fixed[%d]", t.Size())
		return k, k, nil
	case *avro.PrimitiveSchema:
		k, err := icePrimitive(t)
		return k, k, err
	}
	return nil, "", fmt.Errorf("column %s: Avro type %s has no Iceberg type", strings.TrimPrefix(path, "."), s.Type())
}

func icePrimitive(t *avro.PrimitiveSchema) (string, error) {
	var lt avro.LogicalType
	if l := t.Logical(); l != nil {
		lt = l.Type()
	}
	switch t.Type() {
	case avro.Boolean:
		return "boolean", nil
	case avro.Int:
		switch lt {
		case avro.Date:
			return "date", nil
		case avro.TimeMillis:
			return "time", nil
		}
		return "int", nil
	case avro.Long:
		switch lt {
		case avro.TimestampMillis, avro.TimestampMicros:
			return "timestamptz", nil
		case avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			return "timestamp", nil
		case avro.TimeMicros:
			return "time", nil
		}
		return "long", nil
	case avro.Float:
		return "float", nil
	case avro.Double:
		return "double", nil
	case avro.String:
		if lt == avro.UUID {
			return "uuid", nil
		}
		return "string", nil
	case avro.Bytes:
		if d, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			return fmt.Sprintf("decimal(%d, %d)", d.Precision(), d.Scale()), nil
		}
		return "binary", nil
	}
	return "", fmt.Errorf("type %s has no Iceberg type", t.Type())
}

// nameMapping is the table's schema.name-mapping.default: every column id
// of every schema by the name its Parquet column has, so readers find the
// columns of files written under any version.
type nameMapping struct {
	FieldID int           `json:"field-id"`
	Names   []string      `json:"names"`
	Fields  []nameMapping `json:"fields,omitempty"`
}

func iceNameMapping(fields []iceField) []nameMapping {
	var out []nameMapping
	for _, f := range fields {
		out = append(out, nameMapping{FieldID: f.ID, Names: []string{f.Name}, Fields: iceNested(f.Type)})
	}
	return out
}

// iceType is any Iceberg type as JSON has it, so that types built here and
// types read back from a manifest or metadata are mapped alike.
type iceType struct {
	Type      string     `json:"type"`
	Fields    []iceField `json:"fields"`
	ElementID int        `json:"element-id"`
	Element   any        `json:"element"`
	KeyID     int        `json:"key-id"`
	ValueID   int        `json:"value-id"`
	Value     any        `json:"value"`
}

func iceNested(t any) []nameMapping {
	if _, primitive := t.(string); primitive {
		return nil
	}
	data, err := json.Marshal(t)
	if err != nil {
		return nil
	}
	var x iceType
	if json.Unmarshal(data, &x) != nil {
		return nil
	}
	switch x.Type {
	case "struct":
		return iceNameMapping(x.Fields)
	case "list":
		return []nameMapping{{FieldID: x.ElementID, Names: []string{"element"}, Fields: iceNested(x.Element)}}
	case "map":
		return []nameMapping{{FieldID: x.KeyID, Names: []string{"key"}}, {FieldID: x.ValueID, Names: []string{"value"}, Fields: iceNested(x.Value)}}
	}
	return nil
}

// mergeNameMapping adds the columns of m that old lacks (by id), so that
// columns of older schemas stay mapped after they are dropped.
func mergeNameMapping(old, m []nameMapping) []nameMapping {
	out := slices.Clone(m)
	have := map[int]int{}
	for i, f := range out {
		have[f.FieldID] = i
	}
	for _, f := range old {
		if i, ok := have[f.FieldID]; ok {
			out[i].Fields = mergeNameMapping(f.Fields, out[i].Fields)
		} else {
			out = append(out, f)
		}
	}
	return out
}

// addEventTime appends the event time column to a compiled table schema's
// root: its value, in a record's native map, is the event time in epoch
// milliseconds (partWriter.add puts it there).
func addEventTime(root *pqNode) error {
	og, ok := root.node.(orderedGroup)
	if !ok {
		return fmt.Errorf("the table schema is not a record")
	}
	if _, dup := og.Group[eventTimeColumn]; dup {
		return fmt.Errorf("field %s: the name is the table's event time column", eventTimeColumn)
	}
	g := maps.Clone(og.Group)
	// Delta encoding: a file's event times are close together (one hour,
	// mostly in order), so they take a few bits a row instead of eight
	// bytes that snappy barely shrinks.
	g[eventTimeColumn] = parquet.Encoded(parquet.Timestamp(parquet.Microsecond), &parquet.DeltaBinaryPacked)
	root.node = orderedGroup{Group: g, order: append(slices.Clone(og.order), eventTimeColumn)}
	root.fields = append(root.fields, pqLeafNode(g[eventTimeColumn], func(v any) (parquet.Value, error) {
		ms, ok := v.(int64)
		if !ok {
			return parquet.Value{}, fmt.Errorf("event time: %T", v)
		}
		return parquet.Int64Value(ms * 1000), nil
	}))
	root.names = append(root.names, eventTimeColumn)
	return nil
}
