package registry

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestApplyContracts: on replay, a version's metadata and rule set come
// back with it and are part of its schema's identity; a record whose rule
// set is malformed is skipped, never applied without it.
func TestApplyContracts(t *testing.T) {
	const text = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
	meta := json.RawMessage(`{"properties":{"owner":"a"}}`)
	st := newState()
	apply := func(off int64, v schemaValue) string {
		r := schemaRecord(v)
		r.Offset = off
		return st.apply(r)
	}
	if why := apply(0, schemaValue{Subject: "s", Version: 1, ID: 1, Schema: text, Metadata: meta,
		RuleSet: json.RawMessage(`{"domainRules":[{"name":"r","type":"CEL","expr":"true"}]}`)}); why != "" {
		t.Fatal(why)
	}
	got := st.show("s", st.subjects["s"].find(1))
	if got.Metadata == nil || got.Metadata.Properties["owner"] != "a" || got.RuleSet == nil || got.RuleSet.DomainRules[0].Mode != "WRITEREAD" {
		t.Fatalf("replayed version: %+v", got)
	}
	// The same text with another contract claiming id 1 lost a race.
	if why := apply(1, schemaValue{Subject: "t", Version: 1, ID: 1, Schema: text}); !strings.Contains(why, "taken by another schema") {
		t.Errorf("same text, no contract, same id: %q", why)
	}
	if why := apply(2, schemaValue{Subject: "t", Version: 1, ID: 2, Schema: text, Metadata: meta,
		RuleSet: json.RawMessage(`{"domainRules":[{"name":"r"}]}`)}); !strings.Contains(why, "no type") {
		t.Errorf("malformed rule set: %q", why)
	}
	if why := apply(3, schemaValue{Subject: "t", Version: 1, ID: 2, Schema: text}); why != "" {
		t.Errorf("same text without a contract as a new id: %q", why)
	}
	// A field a newer writer added is ignored on replay, not a reason to
	// lose the version (a request with it is refused: TestAPI/contracts).
	if why := apply(4, schemaValue{Subject: "u", Version: 1, ID: 3, Schema: text,
		Metadata: json.RawMessage(`{"properties":{"owner":"b"},"futureField":1}`)}); why != "" {
		t.Errorf("a record with an unknown metadata field: %q", why)
	}
}
