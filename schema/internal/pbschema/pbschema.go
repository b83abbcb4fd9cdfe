// Package pbschema compiles a Protobuf schema as the registry stores it:
// .proto text or a base64 FileDescriptorProto, importing the well-known
// types and the files its references name. The registry (which checks and
// stores schemas) and the deserializer (which reads records written with
// them) compile through it, so a schema the registry took is one every
// reader compiles the same way.
package pbschema

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	// The well-known types, which a descriptor sent in serialized form
	// may import, resolve from the global registry.
	_ "google.golang.org/protobuf/types/known/anypb"
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/emptypb"
	_ "google.golang.org/protobuf/types/known/fieldmaskpb"
	_ "google.golang.org/protobuf/types/known/structpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb"
)

// File is the name the compiled schema has; imports resolve next to it.
const File = "schema.proto"

// Source returns a file for the compiler: .proto text, or a base64
// descriptor, which is given the path it is imported by.
func Source(path, text string) (protocompile.SearchResult, error) {
	if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text)); err == nil && len(b) > 0 {
		var fdp descriptorpb.FileDescriptorProto
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &fdp); err != nil {
			return protocompile.SearchResult{}, fmt.Errorf("%s: base64 text that is not a serialized FileDescriptorProto: %v", path, err)
		}
		fdp.Name = proto.String(path)
		fillJSONNames(fdp.MessageType)
		return protocompile.SearchResult{Proto: &fdp}, nil
	}
	return protocompile.SearchResult{Source: strings.NewReader(text)}, nil
}

// fillJSONNames gives fields without a json_name the one protoc would
// have written: descriptors built by Python's protobuf runtime have none,
// and the compiler takes a missing one for a custom name "" that every
// field of the message shares.
func fillJSONNames(ms []*descriptorpb.DescriptorProto) {
	for _, m := range ms {
		for _, f := range m.Field {
			if f.GetJsonName() == "" {
				f.JsonName = proto.String(jsonCamelCase(f.GetName()))
			}
		}
		fillJSONNames(m.NestedType)
	}
}

// jsonCamelCase is protoc's default JSON name: underscores dropped, the
// letter after each one upper-cased.
func jsonCamelCase(s string) string {
	var b strings.Builder
	up := false
	for _, c := range s {
		switch {
		case c == '_':
			up = true
		case up && 'a' <= c && c <= 'z':
			b.WriteRune(c - 'a' + 'A')
			up = false
		default:
			b.WriteRune(c)
			up = false
		}
	}
	return b.String()
}

// Compile compiles a schema with the referenced files deps, by their
// import paths. An import of anything else but a well-known type is
// refused, naming the references there are.
func Compile(text string, deps map[string]string) (protoreflect.FileDescriptor, error) {
	for name := range deps {
		if name == File || IsWellKnown(name) {
			return nil, fmt.Errorf("reference %q: the name is the import path of the referenced file, and cannot be %s or a well-known type's", name, File)
		}
	}
	resolve := protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		if path == File {
			return Source(path, text)
		}
		if t, ok := deps[path]; ok {
			return Source(path, t)
		}
		if IsWellKnown(path) {
			return protocompile.SearchResult{}, protoregistry.NotFound // the standard imports serve it
		}
		names := slices.Sorted(maps.Keys(deps))
		if len(names) == 0 {
			return protocompile.SearchResult{}, fmt.Errorf("import %q: only the well-known types (google/protobuf/*.proto) and the files the schema's references name may be imported; this schema has no references", path)
		}
		return protocompile.SearchResult{}, fmt.Errorf("import %q: only the well-known types (google/protobuf/*.proto) and the files the schema's references name (%s) may be imported", path, strings.Join(names, ", "))
	})
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(resolve),
		Reporter:       reporter.NewReporter(func(err reporter.ErrorWithPos) error { return err }, nil),
		MaxParallelism: 1,
	}
	compiled, err := c.Compile(context.Background(), File)
	if err != nil {
		return nil, err
	}
	fd := compiled.FindFileByPath(File)
	if fd == nil {
		return nil, fmt.Errorf("%s did not compile", File)
	}
	return fd, nil
}

// IsWellKnown tells an import path of a well-known type.
func IsWellKnown(path string) bool {
	return len(path) > len("google/protobuf/") && path[:len("google/protobuf/")] == "google/protobuf/"
}
