package registry

import "testing"

// at sets a record's offset.
func at(offset int64, r Record) Record { r.Offset = offset; return r }

// _schemas is compacted: a hard-deleted version's records (its schema,
// its soft delete, and after delete.retention.ms its tombstone) disappear,
// leaving offset gaps. Replaying what is left must accept the schemas
// registered after it, and must never give the hard-deleted id out again.
func TestIDsStayUniqueAcrossCompaction(t *testing.T) {
	const schemaC = `{"type":"record","name":"C","fields":[{"name":"c","type":"string"}]}`
	// Written: 0 s/1 id 1; 1 gone/1 id 2; 2 its soft delete; 3 its
	// tombstone; 4 t/1 id 3. Compaction keeps 0 and 4.
	st := newState()
	for _, r := range []Record{
		at(0, schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA})),
		at(4, schemaRecord(schemaValue{Subject: "t", Version: 1, ID: 3, Schema: schemaC})),
	} {
		if why := st.apply(r); why != "" {
			t.Fatalf("offset %d skipped after compaction: %s", r.Offset, why)
		}
	}
	if st.subjects["t"] == nil || st.nextID() <= 3 {
		t.Fatalf("t/1 applied: %v, next id %d (want above 3)", st.subjects["t"] != nil, st.nextID())
	}

	// The hard-deleted id was the highest: 0 s/1 id 1; 1 gone/1 id 2;
	// 2 and 3 its soft delete and tombstone; 4 a config change. Compaction
	// keeps 0 and 4; id 2 must not come back.
	st = newState()
	st.apply(at(0, schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA})))
	st.apply(at(4, configRecord("s", "NONE")))
	if id := st.nextID(); id <= 2 {
		t.Fatalf("next id %d after compaction removed id 2: an id would be reused", id)
	}
	// Without gaps the ids stay dense.
	st = newState()
	st.apply(at(0, schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA})))
	st.apply(at(1, configRecord("s", "NONE")))
	if id := st.nextID(); id != 2 {
		t.Fatalf("next id %d in a log without gaps, want 2", id)
	}
}
