package registry

import (
	"strings"
	"testing"
)

// TestProtobufCompatibility is the table of Confluent's Protobuf rules for
// the common changes, with the verdict of BACKWARD (the new schema reads
// what the old wrote) and FORWARD (the old reads the new).
func TestProtobufCompatibility(t *testing.T) {
	const base = `syntax = "proto3"; package ex; message Page { string url = 1; int32 views = 2; }`
	tests := []struct {
		name              string
		old, new          string
		backward, forward bool
		why               string
	}{
		{"identical, other spacing and comments", base, "syntax = \"proto3\";\n// pages\npackage ex;\nmessage Page {\n  string url = 1; // where\n  int32 views = 2;\n}", true, true, ""},
		{"add a field", base, `syntax = "proto3"; package ex; message Page { string url = 1; int32 views = 2; bool ok = 3; }`, true, true, ""},
		{"remove a field", base, `syntax = "proto3"; package ex; message Page { string url = 1; }`, true, true, ""},
		{"rename a field", base, `syntax = "proto3"; package ex; message Page { string link = 1; int32 views = 2; }`, true, true, ""},
		{"int32 to int64", base, `syntax = "proto3"; package ex; message Page { string url = 1; int64 views = 2; }`, true, true, ""},
		{"int32 to string", base, `syntax = "proto3"; package ex; message Page { string url = 1; string views = 2; }`, false, false, "changed type from int32 to string"},
		{"int32 to sint32", base, `syntax = "proto3"; package ex; message Page { string url = 1; sint32 views = 2; }`, false, false, "read its bytes differently"},
		{"singular to repeated", base, `syntax = "proto3"; package ex; message Page { string url = 1; repeated int32 views = 2; }`, false, false, "repeated and singular"},
		{"package changed", base, `syntax = "proto3"; package other; message Page { string url = 1; int32 views = 2; }`, false, false, "package changed"},
		{"add a message", base, base + ` message Click { string url = 1; }`, true, false, "message ex.Click removed"},
		{"remove a message", base + ` message Click { string url = 1; }`, base, false, true, "message ex.Click removed"},
		{"move into a oneof", base, `syntax = "proto3"; package ex; message Page { string url = 1; oneof c { int32 views = 2; } }`, false, false, "into or out of a oneof"},
		{"remove from a oneof",
			`syntax = "proto3"; package ex; message Page { oneof c { string url = 1; int32 views = 2; } }`,
			`syntax = "proto3"; package ex; message Page { oneof c { string url = 1; } }`, false, true, "removed from oneof c"},
		{"add a required field (proto2)",
			`syntax = "proto2"; package ex; message Page { optional string url = 1; }`,
			`syntax = "proto2"; package ex; message Page { optional string url = 1; required int32 views = 2; }`, false, false, "required field 2 (views)"},
		{"message type of a field changed",
			`syntax = "proto3"; package ex; message A {} message B {} message Page { A x = 1; }`,
			`syntax = "proto3"; package ex; message A {} message B {} message Page { B x = 1; }`, false, false, "changed type from ex.A to ex.B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseSchema(typeProtobuf, tt.old, defaultLimits, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			n, err := parseSchema(typeProtobuf, tt.new, defaultLimits, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			back, fwd := canRead(n, o), canRead(o, n)
			if (back == nil) != tt.backward || (fwd == nil) != tt.forward {
				t.Fatalf("backward %v (%v), forward %v (%v); want %v, %v", back == nil, back, fwd == nil, fwd, tt.backward, tt.forward)
			}
			reason := ""
			for _, err := range []error{back, fwd} {
				if err != nil {
					reason += err.Error()
				}
			}
			if !strings.Contains(reason, tt.why) {
				t.Errorf("reasons %q do not say %q", reason, tt.why)
			}
		})
	}
}

// TestProtobufParse: identity ignores spacing and comments; imports other
// than the well-known types, and schemas over the limits, are refused.
func TestProtobufParse(t *testing.T) {
	a, err := parseSchema(typeProtobuf, `syntax = "proto3"; message M { string a = 1; }`, defaultLimits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseSchema(typeProtobuf, "syntax = \"proto3\";\n\n/* doc */ message M {\n  string a = 1;\n}\n", defaultLimits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Key != b.Key {
		t.Error("spacing or comments changed the identity")
	}
	if _, err := parseSchema(typeProtobuf, `syntax = "proto3"; import "google/protobuf/timestamp.proto"; message M { google.protobuf.Timestamp at = 1; }`, defaultLimits, nil, nil); err != nil {
		t.Errorf("a well-known type: %v", err)
	}
	lim := defaultLimits
	lim.maxNodes = 3
	for _, bad := range []struct{ text, why string }{
		{`syntax = "proto3"; import "other.proto"; message M { string a = 1; }`, "other.proto"},
		{`syntax = "proto3"; message M { string a = 1; string b = 1; }`, "1"},
		{`syntax = "proto3"; message M { string a = 1; int32 b = 2; int32 c = 3; }`, "--schema-max-nodes"},
		{`message {`, "syntax"},
	} {
		if _, err := parseSchema(typeProtobuf, bad.text, lim, nil, nil); err == nil || !strings.Contains(err.Error(), bad.why) {
			t.Errorf("%s: %v, want an error saying %q", bad.text, err, bad.why)
		}
	}
	// An import reads the file a reference names by that path, and only that.
	deps := []refDep{{name: "x.proto", text: `syntax = "proto3"; package x; message A { string s = 1; }`, typ: typeProtobuf}}
	refs := []schemaRef{{Name: "x.proto", Subject: "x", Version: 1}}
	if _, err := parseSchema(typeProtobuf, `syntax = "proto3"; import "x.proto"; message M { x.A a = 1; }`, defaultLimits, refs, deps); err != nil {
		t.Errorf("import through a reference: %v", err)
	}
	if _, err := parseSchema(typeProtobuf, `syntax = "proto3"; import "y.proto"; message M {}`, defaultLimits, refs, deps); err == nil || !strings.Contains(err.Error(), "(x.proto)") {
		t.Errorf("import of a file no reference names: %v", err)
	}
}

// TestProtobufSerializedForm: a schema sent as a base64 descriptor (as
// Confluent's serializers send it) is the same schema as its .proto text,
// and ?format=serialized gives a descriptor that parses back to it.
func TestProtobufSerializedForm(t *testing.T) {
	text, err := parseSchema(typeProtobuf, `syntax = "proto3"; package ex; import "google/protobuf/timestamp.proto"; message M { string a = 1; google.protobuf.Timestamp at = 2; }`, defaultLimits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ser := text.proto.serialized(text.Text)
	back, err := parseSchema(typeProtobuf, ser, defaultLimits, nil, nil)
	if err != nil {
		t.Fatalf("the serialized form does not parse: %v", err)
	}
	if back.Key != text.Key {
		t.Error("the serialized form is another schema")
	}
	if got := back.proto.serialized(back.Text); got != ser {
		t.Error("a schema sent serialized is not served back as sent")
	}
	lim := defaultLimits
	lim.maxDepth = 2
	deep := `syntax = "proto3"; message A { message B { message C { string x = 1; } } }`
	d, err := parseSchema(typeProtobuf, deep, defaultLimits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseSchema(typeProtobuf, d.proto.serialized(deep), lim, nil, nil); err == nil || !strings.Contains(err.Error(), "--schema-max-depth") {
		t.Errorf("a descriptor nesting 3 deep under a limit of 2: %v", err)
	}
	if _, err := parseSchema(typeProtobuf, "AAAA", defaultLimits, nil, nil); err == nil {
		t.Error("base64 that is no descriptor was accepted")
	}
}
