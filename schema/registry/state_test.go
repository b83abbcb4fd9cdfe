package registry

import (
	"strings"
	"testing"
)

const (
	schemaA = `{"type":"record","name":"A","fields":[{"name":"a","type":"string"}]}`
	schemaB = `{"type":"record","name":"B","fields":[{"name":"b","type":"string"}]}`
)

// TestApplyFirstWriterWins feeds the state records as racing nodes would
// write them and checks which ones count. Every node applies the same
// records in the same order, so these rules are what makes them agree.
func TestApplyFirstWriterWins(t *testing.T) {
	tests := []struct {
		name    string
		recs    []Record
		skipped string // substring of the reason the last record is skipped, or ""
		check   func(t *testing.T, st *state)
	}{
		{
			name: "two schemas claim one version",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA}),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 2, Schema: schemaB}),
			},
			skipped: "already taken",
		},
		{
			name: "two schemas claim one version and the same new id",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA}),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaB}),
			},
			skipped: "already taken",
			check: func(t *testing.T, st *state) {
				if got := st.schemas[1].schema.Text; got != schemaA {
					t.Errorf("id 1 is %s", got)
				}
			},
		},
		{
			name: "two schemas claim one new id in different subjects",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA}),
				schemaRecord(schemaValue{Subject: "t", Version: 1, ID: 1, Schema: schemaB}),
			},
			skipped: "taken by another schema",
			check: func(t *testing.T, st *state) {
				if st.subjects["t"] != nil {
					t.Error("subject t exists")
				}
			},
		},
		{
			name: "one schema claims two new ids",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA}),
				schemaRecord(schemaValue{Subject: "t", Version: 1, ID: 2, Schema: schemaA}),
			},
			skipped: "already has id 1",
		},
		{
			name: "a version below the latest",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "s", Version: 2, ID: 1, Schema: schemaA}),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 2, Schema: schemaB}),
			},
			skipped: "below its latest",
		},
		{
			name: "soft delete and re-registration repeat id and schema",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA}),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA, Deleted: true}),
			},
			check: func(t *testing.T, st *state) {
				if !st.subjects["s"].find(1).deleted {
					t.Error("version 1 not deleted")
				}
			},
		},
		{
			name: "soft delete of a version hard-deleted meanwhile",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA}),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA, Deleted: true}),
				tombstoneRecord("s", 1),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA, Deleted: true}),
			},
			check: func(t *testing.T, st *state) {
				if st.subjects["s"] != nil || st.schemas[1] != nil || st.maxID != 1 {
					t.Errorf("subject %v, schema %v, maxID %d", st.subjects["s"], st.schemas[1], st.maxID)
				}
			},
		},
		{
			name: "records of schema types this registry does not serve",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: `<schema/>`, SchemaType: "XML"}),
			},
			skipped: "only AVRO",
		},
		{
			name:    "a key that is not JSON",
			recs:    []Record{{Key: []byte("garbage"), Value: []byte("{}")}},
			skipped: "not JSON",
		},
		{
			name: "Confluent's NOOP records",
			recs: []Record{{Key: []byte(`{"keytype":"NOOP","magic":0}`), Value: nil}},
		},
		{
			name: "config set and reset",
			recs: []Record{
				configRecord("", "FULL"),
				configRecord("s", "none"),
				configRecord("s", ""),
			},
			check: func(t *testing.T, st *state) {
				if st.level("s", Backward) != Full {
					t.Errorf("level %s", st.level("s", Backward))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newState()
			var why string
			for i, r := range tc.recs {
				r.Offset = int64(i)
				why = st.apply(r)
				if why != "" && i < len(tc.recs)-1 {
					t.Fatalf("record %d skipped: %s", i, why)
				}
			}
			if tc.skipped == "" && why != "" || !strings.Contains(why, tc.skipped) {
				t.Errorf("last record: skipped %q, want %q", why, tc.skipped)
			}
			if st.next != int64(len(tc.recs)) {
				t.Errorf("next offset %d", st.next)
			}
			if tc.check != nil {
				tc.check(t, st)
			}
		})
	}
}
