package registry

import (
	"strings"
	"testing"
	"time"
)

// TestJSONCompatibility is the table of Confluent's JSON Schema rules for
// the common changes, each with its verdict under BACKWARD (the new
// schema reads what the old wrote) and FORWARD (the old reads the new).
func TestJSONCompatibility(t *testing.T) {
	const (
		open   = `{"type":"object","properties":{"a":{"type":"string"}}}`
		closed = `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`
	)
	tests := []struct {
		name              string
		old, new          string
		backward, forward bool
		why               string // substring of the BACKWARD or FORWARD reason
	}{
		{"identical", open, open, true, true, ""},
		{"add property, open model", open,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, false, true, "added to an open content model"},
		{"add property, closed model", closed,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":false}`, true, false, "removed from a closed content model"},
		{"add required property, closed model", closed,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"],"additionalProperties":false}`, false, false, "required property \"b\" added"},
		{"remove property, open model",
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, open, true, false, "added to an open content model"},
		{"remove property, closed model",
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":false}`, closed, false, true, "removed from a closed content model"},
		{"change type", open, `{"type":"object","properties":{"a":{"type":"integer"}}}`, false, false, "type changed"},
		{"widen integer to number",
			`{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"type":"object","properties":{"n":{"type":"number"}}}`, true, false, "type changed"},
		{"make a property required", open, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false, true, "required property \"a\" added"},
		{"close an open model", open, closed, false, true, "additionalProperties became false"},
		{"extend an enum", `{"enum":["A","B"]}`, `{"enum":["A","B","C"]}`, true, false, "enum narrowed"},
		{"lower maxLength", `{"type":"string","maxLength":10}`, `{"type":"string","maxLength":5}`, false, true, "maxLength lowered"},
		{"a type where there was none", `{}`, `{"type":"string"}`, false, true, "narrowed from any"},
		{"through a local $ref",
			`{"type":"object","properties":{"a":{"$ref":"#/definitions/s"}},"definitions":{"s":{"type":"string"}}}`,
			`{"type":"object","properties":{"a":{"$ref":"#/definitions/s"}},"definitions":{"s":{"type":"integer"}}}`, false, false, "#/properties/a: type changed"},
		{"add a oneOf branch", `{"oneOf":[{"type":"string"}]}`, `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, true, false, "matches no branch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseSchema(typeJSON, tt.old, defaultLimits, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			n, err := parseSchema(typeJSON, tt.new, defaultLimits, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			back, fwd := canRead(n, o), canRead(o, n)
			if (back == nil) != tt.backward || (fwd == nil) != tt.forward {
				t.Fatalf("backward %v (%v), forward %v (%v); want %v, %v", back == nil, back, fwd == nil, fwd, tt.backward, tt.forward)
			}
			if tt.why != "" {
				reason := ""
				if back != nil {
					reason += back.Error()
				}
				if fwd != nil {
					reason += fwd.Error()
				}
				if !strings.Contains(reason, tt.why) {
					t.Errorf("reasons %q do not say %q", reason, tt.why)
				}
			}
		})
	}
}

// TestJSONSchemaParse: what a JSON schema must be, and what makes two the same.
func TestJSONSchemaParse(t *testing.T) {
	a, err := parseSchema(typeJSON, `{"type":"object", "properties": {"a": {"type":"number","maximum":1.50}}}`, defaultLimits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseSchema(typeJSON, "{\"properties\":{\"a\":{\"maximum\":1.50,\"type\":\"number\"}},\n \"type\":\"object\"}", defaultLimits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Key != b.Key {
		t.Errorf("key order and spacing change the identity:\n%q\n%q", a.Key, b.Key)
	}
	if c, _ := parseSchema(typeAvro, `"string"`, defaultLimits, nil, nil); c.Key == a.Key {
		t.Error("an Avro and a JSON schema share a key")
	}
	lim := defaultLimits
	lim.maxFields = 3
	for _, bad := range []struct{ text, why string }{
		{`{"type": 12}`, "type"},
		{`"string"`, "an object or a boolean"},
		{`{"$ref": "file:///etc/passwd"}`, "may refer only to itself"},
		{`{"$ref": "https://example.com/s.json"}`, "may refer only to itself"},
		{`{"type":"string","pattern":"(?<=a)b"}`, "pattern"},
		{`{"enum":[1,2,3,4]}`, "--schema-max-fields"},
		{`{"type":"object"} {}`, "JSON"},
	} {
		if _, err := parseSchema(typeJSON, bad.text, lim, nil, nil); err == nil || !strings.Contains(err.Error(), bad.why) {
			t.Errorf("%s: %v, want an error saying %q", bad.text, err, bad.why)
		}
	}
	if _, err := parseSchema(typeJSON, `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"$ref":"#/definitions/x"}},"definitions":{"x":{"type":"string"}}}`, defaultLimits, nil, nil); err != nil {
		t.Errorf("draft 4 schema with a local $ref: %v", err)
	}
	// A "$ref" to another document reaches only what a reference names.
	deps := []refDep{{name: "address.json", text: `{"type":"object"}`, typ: typeJSON}}
	if _, err := parseSchema(typeJSON, `{"$ref":"other.json"}`, defaultLimits, []schemaRef{{Name: "address.json", Subject: "a", Version: 1}}, deps); err == nil || !strings.Contains(err.Error(), "no reference has that name (references: address.json)") {
		t.Errorf("$ref to a name no reference has: %v", err)
	}
}

// TestJSONCompatibilityIsBounded: unions through "$ref"s back to the root
// would take exponential time; the check gives up with a reason instead.
func TestJSONCompatibilityIsBounded(t *testing.T) {
	a, err := parseSchema(typeJSON, `{"oneOf":[{"$ref":"#"},{"$ref":"#"},{"type":"string"}]}`, defaultLimits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseSchema(typeJSON, `{"oneOf":[{"$ref":"#"},{"$ref":"#"},{"type":"integer"}]}`, defaultLimits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = canRead(a, b)
	if err == nil || !strings.Contains(err.Error(), "too intricate") {
		t.Errorf("got %v, want the check to give up", err)
	}
	// Unbounded, this pair takes 4^depth steps and never ends; bounded, it
	// takes about a second (more with -race on a loaded machine).
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("the bounded check took %s", d)
	}
	if err := canRead(a, a); err != nil {
		t.Errorf("a schema is not compatible with itself: %v", err)
	}
}
