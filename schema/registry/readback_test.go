package registry

import (
	"strings"
	"testing"
)

// TestApplyRefusesForgedRecords feeds the state records that no registry
// writes — forged by a Kafka client, or damaged — after a live version of
// subject "s" (id 1). Each is skipped with a reason, and neither the id
// counter nor the live version moves.
func TestApplyRefusesForgedRecords(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, 200) + `"int"` + strings.Repeat("}", 200)
	tests := []struct {
		name    string
		rec     Record
		skipped string
	}{
		{"an id at the top of the range, ahead of the counter",
			schemaRecord(schemaValue{Subject: "t", Version: 1, ID: maxID31, Schema: schemaB}), "ahead of the next id"},
		{"an id beyond 2^31-1",
			schemaRecord(schemaValue{Subject: "t", Version: 1, ID: maxID31 + 1, Schema: schemaB}), "outside 1..2^31-1"},
		{"id 0", schemaRecord(schemaValue{Subject: "t", Version: 1, ID: 0, Schema: schemaB}), "outside 1..2^31-1"},
		{"a negative version", schemaRecord(schemaValue{Subject: "t", Version: -3, ID: 2, Schema: schemaB}), "outside 1..2^31-1"},
		{"a tombstone for a live version", tombstoneRecord("s", 1), "which is live"},
		{"a tombstone with version 0", tombstoneRecord("s", 0), "outside 1..2^31-1"},
		{"key and value that disagree",
			Record{Key: schemaRecord(schemaValue{Subject: "t", Version: 1}).Key, Value: schemaRecord(schemaValue{Subject: "u", Version: 1, ID: 2, Schema: schemaB}).Value},
			"its key names"},
		{"a subject with control characters",
			schemaRecord(schemaValue{Subject: "t\x00", Version: 1, ID: 2, Schema: schemaB}), "valid subject"},
		{"a schema nested beyond the depth limit",
			schemaRecord(schemaValue{Subject: "t", Version: 1, ID: 2, Schema: deep}), "deeper than 128"},
		{"a schema that does not parse",
			schemaRecord(schemaValue{Subject: "t", Version: 1, ID: 2, Schema: `{"type":"nope"}`}), "does not parse"},
		{"a value of the wrong shape",
			Record{Key: schemaRecord(schemaValue{Subject: "t", Version: 1}).Key, Value: []byte(`{"subject":["t"],"id":"2"}`)}, "expected shape"},
		{"a key of the wrong shape", Record{Key: []byte(`["SCHEMA"]`), Value: []byte(`{}`)}, "expected shape"},
		{"a delete-subject record for another subject",
			Record{Key: deleteSubjectRecord("x", 1).Key, Value: deleteSubjectRecord("s", 1).Value}, "does not match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newState()
			if why := st.apply(schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA})); why != "" {
				t.Fatal(why)
			}
			tc.rec.Offset = 1 // right after: a gap would be compaction's, which raises the next id
			if why := st.apply(tc.rec); !strings.Contains(why, tc.skipped) || why == "" {
				t.Fatalf("skipped %q, want %q", why, tc.skipped)
			}
			if st.maxID != 1 || len(st.schemas) != 1 || st.subjects["t"] != nil || st.subjects["u"] != nil {
				t.Errorf("state changed: maxID %d, %d schemas, subjects %v", st.maxID, len(st.schemas), st.subjects)
			}
			if v := st.subjects["s"].find(1); v == nil || v.deleted || v.id != 1 {
				t.Errorf("live version s/1 is now %+v", v)
			}
			if st.next != 2 {
				t.Errorf("next offset %d, want 2", st.next)
			}
			p, aerr := st.planRegister("t", mustParse(t, schemaB), Backward, imported{})
			if aerr != nil || p.id != 2 || p.num != 1 {
				t.Errorf("next registration: id %d version %d (%v), want id 2 version 1", p.id, p.num, aerr)
			}
		})
	}
}

func mustParse(t *testing.T, text string) *schemaDoc {
	t.Helper()
	s, err := parseSchema(typeAvro, text, defaultLimits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
