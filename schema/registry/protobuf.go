package registry

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tributary-io/tributary/schema/internal/pbschema"
)

// Protobuf (schemaType PROTOBUF): .proto text, proto2 or proto3, compiled
// by github.com/bufbuild/protocompile (schema/internal/pbschema). It may import the well-known types
// (google/protobuf/*.proto, built in) and the schemas its references name:
// a reference's name is the import path, as Confluent has it, and the
// referenced schema, in either form below, is what that import reads. The
// identity of a schema is its compiled descriptor without comments or
// positions, serialized deterministically, with its references: spacing
// and comments do not make another schema.
//
// Confluent's Protobuf serializers send, and ask for (?format=serialized),
// a schema as its FileDescriptorProto in base64; such a text is taken as
// that descriptor, and the same schema in either form is one schema.

const typeProtobuf = "PROTOBUF"

// protoDoc is a compiled Protobuf schema.
type protoDoc struct {
	file protoreflect.FileDescriptor
}

func parseProtobuf(text string, lim schemaLimits, deps []refDep) (*schemaDoc, error) {
	fd, err := compileProto(text, deps)
	if err != nil {
		return nil, err
	}
	n, depth := protoNodes(fd)
	if n > lim.maxNodes {
		return nil, fmt.Errorf("schema has %d messages, enums and fields; the limit is %d (MaxSchemaNodes, --schema-max-nodes)", n, lim.maxNodes)
	}
	if depth > lim.maxDepth {
		// A base64 descriptor is not measured as text: its nesting counts here.
		return nil, fmt.Errorf("schema nests messages %d deep; the limit is %d (MaxSchemaDepth, --schema-max-depth)", depth, lim.maxDepth)
	}
	fdp := protodesc.ToFileDescriptorProto(fd)
	fdp.SourceCodeInfo = nil
	fdp.Name = proto.String(pbschema.File) // the name a sender gave its file is not the schema
	key, err := proto.MarshalOptions{Deterministic: true}.Marshal(fdp)
	if err != nil {
		return nil, err
	}
	return &schemaDoc{Type: typeProtobuf, Text: text, Key: typeProtobuf + "\x00" + string(key), proto: &protoDoc{file: fd}}, nil
}

// compileProto compiles a schema with the referenced files deps
// (pbschema.Compile).
func compileProto(text string, deps []refDep) (protoreflect.FileDescriptor, error) {
	files := make(map[string]string, len(deps))
	for _, d := range deps {
		files[d.name] = d.text
	}
	return pbschema.Compile(text, files)
}

// serialized is the schema as Confluent's ?format=serialized gives it:
// its FileDescriptorProto in base64 (as sent, if it was sent so).
func (p *protoDoc) serialized(text string) string {
	if _, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text)); err == nil {
		return strings.TrimSpace(text)
	}
	fdp := protodesc.ToFileDescriptorProto(p.file)
	fdp.SourceCodeInfo = nil
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(fdp)
	return base64.StdEncoding.EncodeToString(b)
}

// protoNodes counts a file's messages, enums, fields and enum values, and
// how deep its messages nest.
func protoNodes(fd protoreflect.FileDescriptor) (n, depth int) {
	var msgs func(ms protoreflect.MessageDescriptors, d int)
	enums := func(es protoreflect.EnumDescriptors) {
		for i := 0; i < es.Len(); i++ {
			n += 1 + es.Get(i).Values().Len()
		}
	}
	msgs = func(ms protoreflect.MessageDescriptors, d int) {
		if ms.Len() > 0 {
			depth = max(depth, d)
		}
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			n += 1 + m.Fields().Len()
			enums(m.Enums())
			msgs(m.Messages(), d+1)
		}
	}
	msgs(fd.Messages(), 1)
	enums(fd.Enums())
	return n, depth
}

// protoCompatible returns nil when data written with writer reads with
// reader, after Confluent's rules for Protobuf:
//
//	package changed                                   incompatible
//	message the writer has, reader lacks               incompatible (message removed)
//	field added or removed                             compatible (unknown fields are skipped)
//	field removed from a oneof; required field added or removed (proto2)   incompatible
//	field renamed, same number and type                compatible
//	scalar type changed within a wire-compatible group compatible (int32, uint32, int64, uint64, bool;
//	                                                   sint32, sint64; fixed32, sfixed32; fixed64, sfixed64;
//	                                                   string, bytes)
//	other type changes, message or enum type changed   incompatible
//	repeated ↔ singular; moved into or out of a oneof  incompatible
//	message of an imported file (a reference)          compared by the same rules
func protoCompatible(reader, writer *protoDoc) error {
	r, w := reader.file, writer.file
	if r.Package() != w.Package() {
		return fmt.Errorf("package changed from %q to %q", w.Package(), r.Package())
	}
	return compareMessages(r.Messages(), w.Messages(), map[protoreflect.FullName]bool{})
}

// compareMessages compares the messages a writer file defines with the
// reader's; seen holds the imported messages compared already (through
// fields, see compareField), which also ends a cycle of them.
func compareMessages(rs, ws protoreflect.MessageDescriptors, seen map[protoreflect.FullName]bool) error {
	for i := 0; i < ws.Len(); i++ {
		wm := ws.Get(i)
		rm := rs.ByName(wm.Name())
		if rm == nil {
			return fmt.Errorf("message %s removed", wm.FullName())
		}
		if err := compareFields(rm, wm, seen); err != nil {
			return err
		}
		if err := compareMessages(rm.Messages(), wm.Messages(), seen); err != nil {
			return err
		}
	}
	return nil
}

func compareFields(rm, wm protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) error {
	for i := 0; i < wm.Fields().Len(); i++ {
		wf := wm.Fields().Get(i)
		rf := rm.Fields().ByNumber(wf.Number())
		if rf == nil {
			switch {
			case wf.ContainingOneof() != nil && !wf.ContainingOneof().IsSynthetic():
				return fmt.Errorf("%s: field %d (%s) removed from oneof %s", wm.FullName(), wf.Number(), wf.Name(), wf.ContainingOneof().Name())
			case wf.Cardinality() == protoreflect.Required:
				return fmt.Errorf("%s: required field %d (%s) removed", wm.FullName(), wf.Number(), wf.Name())
			}
			continue
		}
		if err := compareField(wm, rf, wf, seen); err != nil {
			return err
		}
	}
	for i := 0; i < rm.Fields().Len(); i++ {
		rf := rm.Fields().Get(i)
		if wm.Fields().ByNumber(rf.Number()) == nil && rf.Cardinality() == protoreflect.Required {
			return fmt.Errorf("%s: required field %d (%s) added", rm.FullName(), rf.Number(), rf.Name())
		}
	}
	return nil
}

func compareField(m protoreflect.MessageDescriptor, rf, wf protoreflect.FieldDescriptor, seen map[protoreflect.FullName]bool) error {
	at := fmt.Sprintf("%s: field %d (%s)", m.FullName(), wf.Number(), wf.Name())
	if (rf.Cardinality() == protoreflect.Repeated) != (wf.Cardinality() == protoreflect.Repeated) || rf.IsMap() != wf.IsMap() {
		return fmt.Errorf("%s changed between repeated and singular", at)
	}
	if realOneof(rf) != realOneof(wf) {
		return fmt.Errorf("%s moved into or out of a oneof", at)
	}
	rk, wk := rf.Kind(), wf.Kind()
	switch {
	case rk == protoreflect.MessageKind || rk == protoreflect.GroupKind || wk == protoreflect.MessageKind || wk == protoreflect.GroupKind:
		if rk != wk || rf.Message().FullName() != wf.Message().FullName() {
			return fmt.Errorf("%s changed type from %s to %s", at, kindName(wf), kindName(rf))
		}
		// A message from an imported file (a reference, which each side
		// may take at another version) is compared as Confluent does: its
		// fields too. The file's own messages are compared by
		// compareMessages.
		if rm, wm := rf.Message(), wf.Message(); wm.ParentFile().Path() != pbschema.File && !seen[wm.FullName()] {
			seen[wm.FullName()] = true
			if err := compareFields(rm, wm, seen); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			if err := compareMessages(rm.Messages(), wm.Messages(), seen); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
	case rk == protoreflect.EnumKind || wk == protoreflect.EnumKind:
		if rk != wk || rf.Enum().FullName() != wf.Enum().FullName() {
			return fmt.Errorf("%s changed type from %s to %s", at, kindName(wf), kindName(rf))
		}
	case rk != wk && scalarGroup(rk) != scalarGroup(wk):
		return fmt.Errorf("%s changed type from %s to %s, which read its bytes differently", at, kindName(wf), kindName(rf))
	}
	return nil
}

func realOneof(f protoreflect.FieldDescriptor) string {
	if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return string(o.Name())
	}
	return ""
}

func kindName(f protoreflect.FieldDescriptor) string {
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(f.Message().FullName())
	case protoreflect.EnumKind:
		return string(f.Enum().FullName())
	}
	return f.Kind().String()
}

// scalarGroup names the scalar kinds whose encodings read as each other.
func scalarGroup(k protoreflect.Kind) string {
	groups := [][]protoreflect.Kind{
		{protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Uint64Kind, protoreflect.BoolKind},
		{protoreflect.Sint32Kind, protoreflect.Sint64Kind},
		{protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind},
		{protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind},
		{protoreflect.StringKind, protoreflect.BytesKind},
	}
	for i, g := range groups {
		if slices.Contains(g, k) {
			return fmt.Sprint(i)
		}
	}
	return k.String()
}
