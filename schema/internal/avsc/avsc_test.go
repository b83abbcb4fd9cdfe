package avsc

import (
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	base := `{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"long"}]}`
	for _, tc := range []struct {
		name, other string
		same        bool
	}{
		{"whitespace and attribute order", `{ "fields": [ {"type": "long", "name": "a"} ], "namespace": "n", "name": "R", "type": "record" }`, true},
		{"full name instead of namespace", `{"type":"record","name":"n.R","fields":[{"name":"a","type":"long"}]}`, true},
		{"doc, order and custom properties", `{"type":"record","name":"R","namespace":"n","doc":"d","java-class":"x","fields":[{"name":"a","type":"long","doc":"d","order":"descending"}]}`, true},
		{"primitive type as object", `{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":{"type":"long"}}]}`, true},
		{"a default", `{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"long","default":0}]}`, false},
		{"a logical type", `{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":{"type":"long","logicalType":"timestamp-millis"}}]}`, false},
		{"a field alias", `{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"long","aliases":["old"]}]}`, false},
		{"another namespace", `{"type":"record","name":"R","namespace":"m","fields":[{"name":"a","type":"long"}]}`, false},
		{"another field type", `{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int"}]}`, false},
	} {
		a, err := Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Parse(tc.other)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (a.Key == b.Key) != tc.same {
			t.Errorf("%s: same=%v, want %v\n%s\n%s", tc.name, a.Key == b.Key, tc.same, a.Key, b.Key)
		}
	}
}

// TestParseIsolated: a schema cannot use a named type that only another,
// earlier schema defined.
func TestParseIsolated(t *testing.T) {
	if _, err := Parse(`{"type":"enum","name":"n.E","symbols":["A"]}`); err != nil {
		t.Fatal(err)
	}
	_, err := Parse(`{"type":"record","name":"R","fields":[{"name":"e","type":"n.E"}]}`)
	if err == nil || !strings.Contains(err.Error(), "n.E") {
		t.Fatalf("reference to a type defined elsewhere: %v", err)
	}
}

func TestParseRejects(t *testing.T) {
	for _, s := range []string{"", "  ", "{", `"nope"`, `{"type":"fixed","name":"F"}`, `{"type":"enum","name":"E","symbols":["A","A"]}`,
		// goavro panicked on this one, which hamba takes.
		`{"type":"record","name":"long","fields":[{"name":"x","type":"long","default":0}]}`} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}
