package registry

import (
	"strings"
	"testing"
)

// TestApplyModes feeds the state MODE records and the registrations that
// follow them: every node applies a mode at the same point of the log, so
// what it allows after that point is the same everywhere.
func TestApplyModes(t *testing.T) {
	tests := []struct {
		name    string
		recs    []Record
		skipped string // substring of why the last record is skipped, or ""
		check   func(t *testing.T, st *state)
	}{
		{
			name: "a registration after READONLY is skipped",
			recs: []Record{
				modeRecord("", modeReadOnly),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA}),
			},
			skipped: "READONLY mode",
		},
		{
			name: "a soft delete after READONLY still applies (it was decided before)",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA}),
				modeRecord("s", modeReadOnly),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA, Deleted: true}),
			},
			check: func(t *testing.T, st *state) {
				if !st.subjects["s"].find(1).deleted {
					t.Error("s/1 is not deleted")
				}
			},
		},
		{
			name: "a subject READWRITE under a global READONLY_OVERRIDE stays read-only",
			recs: []Record{
				modeRecord("s", modeReadWrite),
				modeRecord("", modeReadOnlyOverride),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA}),
			},
			skipped: "READONLY_OVERRIDE mode",
		},
		{
			name: "IMPORT takes ids ahead of the counter and versions out of order",
			recs: []Record{
				modeRecord("", modeImport),
				schemaRecord(schemaValue{Subject: "s", Version: 5, ID: 1000, Schema: schemaA}),
				schemaRecord(schemaValue{Subject: "s", Version: 2, ID: 7, Schema: schemaB}),
			},
			check: func(t *testing.T, st *state) {
				if got := st.nextID(); got != 1001 {
					t.Errorf("next id %d, want 1001", got)
				}
				if v := st.subjects["s"].versions; len(v) != 2 || v[0].num != 2 || v[1].num != 5 {
					t.Errorf("versions out of order: %+v %+v", v[0], v[1])
				}
			},
		},
		{
			name: "without IMPORT an id ahead of the counter is still refused",
			recs: []Record{
				modeRecord("", modeImport),
				modeRecord("", ""),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1000, Schema: schemaA}),
			},
			skipped: "ahead of the next id",
		},
		{
			name: "IMPORT does not let one id name two schemas",
			recs: []Record{
				modeRecord("", modeImport),
				schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 9, Schema: schemaA}),
				schemaRecord(schemaValue{Subject: "t", Version: 1, ID: 9, Schema: schemaB}),
			},
			skipped: "taken by another schema",
		},
		{
			name:    "an unknown mode is skipped",
			recs:    []Record{{Key: []byte(`{"keytype":"MODE","subject":null,"magic":0}`), Value: []byte(`{"mode":"SIDEWAYS"}`)}},
			skipped: "unknown mode",
			check: func(t *testing.T, st *state) {
				if m := st.mode("x"); m != modeReadWrite {
					t.Errorf("mode %s", m)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newState()
			var why string
			for i, r := range tt.recs {
				r.Offset = int64(i)
				why = st.apply(r)
				if i < len(tt.recs)-1 && why != "" {
					t.Fatalf("record %d skipped: %s", i, why)
				}
			}
			if tt.skipped == "" && why != "" || !strings.Contains(why, tt.skipped) {
				t.Fatalf("last record: skipped %q, want %q", why, tt.skipped)
			}
			if tt.check != nil {
				tt.check(t, st)
			}
		})
	}
}
