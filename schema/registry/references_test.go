package registry

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const (
	addressSchema = `{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"city","type":"string"}]}`
	personSchema  = `{"type":"record","name":"Person","namespace":"com.example","fields":[{"name":"home","type":"Address"}]}`
)

var addressRef = json.RawMessage(`[{"name":"com.example.Address","subject":"address","version":1}]`)

// TestApplyReferences: on replay, a schema's references are resolved
// against what the log holds at that point, and a version stays while
// something references it.
func TestApplyReferences(t *testing.T) {
	tests := []struct {
		name    string
		recs    []Record
		skipped string
		check   func(t *testing.T, st *state)
	}{
		{
			name: "a reference to a version the log has resolves",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "address", Version: 1, ID: 1, Schema: addressSchema}),
				schemaRecord(schemaValue{Subject: "person", Version: 1, ID: 2, Schema: personSchema, References: addressRef}),
			},
			check: func(t *testing.T, st *state) {
				if got := st.referencedBy("address", 1); len(got) != 1 || got[0] != 2 {
					t.Errorf("address/1 referenced by %v", got)
				}
			},
		},
		{
			name: "a reference to a version the log lacks is skipped",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "person", Version: 1, ID: 1, Schema: personSchema, References: addressRef}),
			},
			skipped: "has no version 1",
		},
		{
			name: "references that are not a list are skipped",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "address", Version: 1, ID: 1, Schema: addressSchema}),
				schemaRecord(schemaValue{Subject: "person", Version: 1, ID: 2, Schema: personSchema, References: json.RawMessage(`{"name":"x"}`)}),
			},
			skipped: "not a JSON array",
		},
		{
			name: "a tombstone for a referenced version is refused",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "address", Version: 1, ID: 1, Schema: addressSchema}),
				schemaRecord(schemaValue{Subject: "person", Version: 1, ID: 2, Schema: personSchema, References: addressRef}),
				schemaRecord(schemaValue{Subject: "address", Version: 1, ID: 1, Schema: addressSchema, Deleted: true}),
				tombstoneRecord("address", 1),
			},
			skipped: "reference",
			check: func(t *testing.T, st *state) {
				if st.schemas[1] == nil {
					t.Error("address's schema is gone")
				}
			},
		},
		{
			name: "the same text with and without references are two schemas",
			recs: []Record{
				schemaRecord(schemaValue{Subject: "address", Version: 1, ID: 1, Schema: addressSchema}),
				schemaRecord(schemaValue{Subject: "inline", Version: 1, ID: 2, Schema: strings.Replace(personSchema, `"Address"`, addressSchema, 1)}),
				schemaRecord(schemaValue{Subject: "person", Version: 1, ID: 3, Schema: personSchema, References: addressRef}),
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

// TestResolveRefsLimits: what references reach is bounded in count,
// nesting and bytes.
func TestResolveRefsLimits(t *testing.T) {
	st := newState()
	// A chain: t1 ← t2 ← ... each referencing the one before.
	prev := ""
	for i := 1; i <= 6; i++ {
		name := "T" + string(rune('0'+i))
		text := `{"type":"record","name":"` + name + `","fields":[{"name":"f","type":"string"}]}`
		var refs json.RawMessage
		if prev != "" {
			refs = json.RawMessage(`[{"name":"` + prev + `","subject":"` + prev + `","version":1}]`)
		}
		if why := st.apply(Record{Offset: int64(i - 1), Key: schemaRecord(schemaValue{Subject: name, Version: 1, ID: i, Schema: text}).Key,
			Value: mustJSON(schemaValue{Subject: name, Version: 1, ID: i, Schema: text, References: refs})}); why != "" {
			t.Fatal(why)
		}
		prev = name
	}
	top := []schemaRef{{Name: "T6", Subject: "T6", Version: 1}}
	if deps, err := st.resolveRefs("", top, defaultLimits); err != nil || len(deps) != 6 || !strings.Contains(deps[0].text, `"T1"`) {
		t.Fatalf("chain of 6: %d deps, %v; want T1 first", len(deps), err)
	}
	lim := defaultLimits
	lim.maxDepth = 3
	if _, err := st.resolveRefs("", top, lim); err == nil || !strings.Contains(err.Error(), "--schema-max-depth") {
		t.Errorf("depth 6 under a limit of 3: %v", err)
	}
	lim = defaultLimits
	lim.maxBytes = 200
	if _, err := st.resolveRefs("", top, lim); err == nil || !strings.Contains(err.Error(), "--schema-max-bytes") {
		t.Errorf("6 schemas under 200 bytes: %v", err)
	}
	many := make([]json.RawMessage, maxReferences+1)
	for i := range many {
		many[i] = json.RawMessage(`{"name":"n` + strings.Repeat("x", i) + `","subject":"s","version":1}`)
	}
	if _, err := decodeRefs(many); err == nil {
		t.Errorf("%d references accepted", len(many))
	}
}

// FuzzReferences sends arbitrary register and lookup bodies to a node that
// has a referenceable schema (address, version 1): answers are
// Confluent-shaped, never a panic or a 5xx.
func FuzzReferences(f *testing.F) {
	for _, seed := range []string{
		`{"schema":` + quote(personSchema) + `,"references":` + string(addressRef) + `}`,
		`{"schema":` + quote(personSchema) + `,"references":[{"name":"com.example.Address","subject":"address","version":2}]}`,
		`{"schema":` + quote(personSchema) + `,"references":[{"name":"a","subject":"address","version":1},{"name":"a","subject":"address","version":1}]}`,
		`{"schema":` + quote(addressSchema) + `,"references":` + string(addressRef) + `}`,
		`{"schema":"\"string\"","references":[{"name":"x","subject":"\u0000","version":-1}]}`,
		`{"schema":"\"string\"","references":[null]}`,
		`{"schema":"\"string\"","references":{}}`,
		`{"schemaType":"JSON","schema":"{\"properties\":{\"h\":{\"$ref\":\"address.json#/properties/city\"}}}","references":[{"name":"address.json","subject":"address.json","version":1}]}`,
		`{"schemaType":"JSON","schema":"{\"$id\":\"https://x.example/p.json\",\"$ref\":\"a.json\"}","references":[{"name":"a.json","subject":"address.json","version":1}]}`,
		`{"schemaType":"JSON","schema":"{\"$ref\":\"address.json\"}","references":[{"name":"address.json","subject":"address","version":1}]}`,
		`{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; import \"ex/address.proto\"; message P { ex.Address a = 1; }","references":[{"name":"ex/address.proto","subject":"ex/address.proto","version":1}]}`,
		`{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; import \"schema.proto\"; message P {}","references":[{"name":"schema.proto","subject":"ex/address.proto","version":1}]}`,
		`{"schema":"\"string\"","metadata":{"properties":{"a":"b"}},"ruleSet":{"domainRules":[{"name":"r","type":"CEL","mode":"WRITEREAD","onFailure":"ERROR,NONE"}]}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		srv, err := NewWithLog(t.Context(), NewMemoryLog().Open(), Config{Logger: quiet(), MaxSchemaBytes: 64 << 10, MaxSchemaDepth: 32})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		h := srv.Handler()
		post := func(path, body string) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
			return rec
		}
		for _, reg := range [][2]string{
			{"address", `{"schema":` + quote(addressSchema) + `}`},
			{"address.json", `{"schemaType":"JSON","schema":"{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}"}`},
			{"ex%2Faddress.proto", `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; package ex; message Address { string city = 1; }"}`},
		} {
			if rec := post("/subjects/"+reg[0]+"/versions", reg[1]); rec.Code != 200 {
				t.Fatalf("register %s: %d %s", reg[0], rec.Code, rec.Body)
			}
		}
		for _, path := range []string{"/subjects/s", "/compatibility/subjects/s/versions/latest?verbose=true", "/subjects/s/versions"} {
			rec := post(path, body)
			if rec.Code >= 500 {
				t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
			}
			if rec.Code != 200 {
				var e apiError
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == 0 {
					t.Fatalf("POST %s: %d with a body not in Confluent's shape: %s", path, rec.Code, rec.Body)
				}
			}
		}
	})
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
