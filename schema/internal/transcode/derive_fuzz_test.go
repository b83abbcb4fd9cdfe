package transcode_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tributary-io/tributary/schema/internal/avsc"
	"github.com/tributary-io/tributary/schema/internal/jsschema"
	"github.com/tributary-io/tributary/schema/internal/pbschema"
	"github.com/tributary-io/tributary/schema/internal/transcode"
)

// FuzzDeriveProto: every message of every .proto text that compiles
// derives an Avro schema that both Avro libraries parse (or is refused
// with an error, never a panic), so a schema the registry takes never
// leaves its records unreadable.
func FuzzDeriveProto(f *testing.F) {
	for _, s := range []string{
		`syntax = "proto3"; package a.b; message M { message N { M m = 1; } N n = 1; repeated N ns = 2; map<string, N> mn = 3; oneof o { int32 x = 4; N y = 5; } }`,
		`syntax = "proto2"; message T { optional T t = 1; repeated group G = 2 { optional T in = 3; required int64 r = 4; } }`,
		`syntax = "proto3"; import "google/protobuf/timestamp.proto"; import "google/protobuf/struct.proto"; import "google/protobuf/empty.proto";
		 message E { google.protobuf.Timestamp t = 1; google.protobuf.Struct s = 2; google.protobuf.Empty e = 3; repeated google.protobuf.Value v = 4; }`,
		`syntax = "proto3"; message long { int64 x = 1; } message W { long l = 1; }`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		fd, err := pbschema.Compile(text, nil)
		if err != nil {
			return
		}
		var walk func(ms protoreflect.MessageDescriptors)
		walk = func(ms protoreflect.MessageDescriptors) {
			for i := 0; i < ms.Len(); i++ {
				md := ms.Get(i)
				if md.IsMapEntry() {
					continue
				}
				p, err := transcode.NewProto(md)
				if err == nil {
					if _, err := avsc.Parse(p.Schema()); err != nil {
						t.Fatalf("message %s derived a schema that does not parse: %v\n%s", md.FullName(), err, p.Schema())
					}
				}
				walk(md.Messages())
			}
		}
		walk(fd.Messages())
	})
}

// FuzzDeriveJSON is FuzzDeriveProto for JSON schemas.
func FuzzDeriveJSON(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a-b":{"type":"object","properties":{"x":{"type":"integer"}}},"a":{"type":"object","properties":{"b":{"type":"object"}}},"a_b":{"type":"string"}}}`,
		`{"title":"1 x","type":"object","properties":{"n":{"$ref":"#"},"d":{"$ref":"#/definitions/d"}},"definitions":{"d":{"type":["object","null"],"properties":{"d":{"$ref":"#/definitions/d"}}}}}`,
		`{"type":"object","properties":{"t":{"type":"array","items":{"type":"array","items":{"type":"object","additionalProperties":{"type":"number"}}}},"e":{"enum":["a","b"]},"o":{"oneOf":[{"type":"null"},{"type":"string","format":"date-time"}]}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		order := transcode.KeyOrder{}
		doc, err := transcode.DecodeSchema(text, order)
		if err != nil {
			return
		}
		if _, err := jsschema.Compile(doc, nil); err != nil {
			return
		}
		j, err := transcode.NewJSON(doc, nil, order)
		if err != nil {
			return
		}
		if _, err := avsc.Parse(j.Schema()); err != nil {
			t.Fatalf("derived a schema that does not parse: %v\n%s", err, j.Schema())
		}
	})
}
