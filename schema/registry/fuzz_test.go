package registry

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzSchemaRequest sends arbitrary bodies to the endpoints that take a
// schema (register, lookup, compatibility) on a node over a memory log.
// Whatever the body, the answer is a status with a Confluent-shaped body,
// never a panic; the limits keep what a body can cost bounded.
func FuzzSchemaRequest(f *testing.F) {
	for _, seed := range []string{
		`{"schema":"\"string\""}`,
		`{"schema":"{\"type\":\"record\",\"name\":\"A\",\"fields\":[{\"name\":\"a\",\"type\":\"int\",\"default\":1}]}"}`,
		`{"schema":"{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"],\"default\":\"A\"}"}`,
		`{"schema":"[\"null\",{\"type\":\"array\",\"items\":{\"type\":\"map\",\"values\":\"long\"}}]"}`,
		`{"schema":"{\"type\":\"fixed\",\"name\":\"F\",\"size\":16,\"logicalType\":\"decimal\",\"precision\":4}"}`,
		`{"schema":"` + strings.Repeat(`[`, 200) + `"}`,
		`{"schema":"\"string\"","schemaType":"PROTOBUF"}`,
		`{"schema":"syntax = \"proto3\"; package p; import \"google/protobuf/timestamp.proto\"; message M { google.protobuf.Timestamp t = 1; map<string, M> m = 2; }","schemaType":"PROTOBUF"}`,
		`{"schema":"{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/definitions/x\"}},\"definitions\":{\"x\":{\"type\":\"string\",\"pattern\":\"^a+$\"}}}","schemaType":"JSON"}`,
		`{"schema":"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$ref\":\"#\"}","schemaType":"JSON"}`,
		`{"schema":"\"string\"","references":[{"name":"x"}]}`,
		`{"schema":null}`, `[]`, `{`, ``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		// A node per input: registrations would otherwise pile up in the
		// memory log for as long as the fuzzer runs.
		srv, err := NewWithLog(t.Context(), NewMemoryLog().Open(), Config{Logger: quiet(), MaxSchemaBytes: 64 << 10, MaxSchemaDepth: 32})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		h := srv.Handler()
		for _, path := range []string{"/subjects/s", "/compatibility/subjects/s/versions/latest?verbose=true", "/subjects/s/versions"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
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

// FuzzApplyRecord applies arbitrary key and value bytes, as read back from
// _schemas, after a live version. Nothing may panic, and no record may
// remove the live version or push the id counter past the next id.
func FuzzApplyRecord(f *testing.F) {
	for _, r := range []Record{
		schemaRecord(schemaValue{Subject: "t", Version: 1, ID: 2, Schema: schemaB}),
		schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA, Deleted: true}),
		schemaRecord(schemaValue{Subject: "t", Version: 1, ID: maxID31, Schema: schemaB}),
		tombstoneRecord("s", 1),
		schemaRecord(schemaValue{Subject: "p", Version: 1, ID: 2, Schema: `syntax = "proto3"; message M { string a = 1; }`, SchemaType: "PROTOBUF"}),
		schemaRecord(schemaValue{Subject: "j", Version: 1, ID: 2, Schema: `{"type":"object"}`, SchemaType: "JSON"}),
		configRecord("", "FULL"),
		configRecord("s", ""),
		modeRecord("", "IMPORT"),
		schemaRecord(schemaValue{Subject: "t", Version: 1, ID: 2, Schema: `{"type":"record","name":"T","fields":[{"name":"a","type":"A"}]}`,
			References: json.RawMessage(`[{"name":"A","subject":"s","version":1}]`)}),
		tombstoneRecord("s", 1),
		modeRecord("s", "READONLY"),
		modeRecord("s", ""),
		{Key: []byte(`{"keytype":"MODE","subject":null,"magic":0}`), Value: []byte(`{"mode":"SIDEWAYS"}`)},
		deleteSubjectRecord("s", 1),
		{Key: []byte(`{"keytype":"NOOP","magic":0}`)},
		idFloorRecord(5),
		{Key: []byte(`{"keytype":"SCHEMA","subject":"s","version":1e99}`), Value: []byte(`{}`)},
		schemaRecord(schemaValue{Subject: ":.c:s", Version: 1, ID: 1, Schema: schemaB, Metadata: json.RawMessage(`{"properties":{"a":"b"},"tags":{"x":["y"]}}`),
			RuleSet: json.RawMessage(`{"domainRules":[{"name":"r","type":"CEL","expr":"true"}]}`)}),
		schemaRecord(schemaValue{Subject: "j2", Version: 1, ID: 2, Schema: `{"$ref":"a.json"}`, SchemaType: "JSON",
			References: json.RawMessage(`[{"name":"a.json","subject":"j","version":1}]`)}),
		{Key: []byte(`{"keytype":"CONFIG","subject":"s","magic":0}`), Value: []byte(`{"compatibilityGroup":"major"}`)},
		{Key: []byte(`{"keytype":"CONTEXT","tenant":"default","context":".c","magic":0}`), Value: []byte(`{"tenant":"default","context":".c"}`)},
	} {
		f.Add(r.Key, r.Value, r.Value == nil)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		st := newState()
		st.limits = schemaLimits{maxBytes: 64 << 10, maxDepth: 32, maxNodes: 1000, maxBranches: 100, maxFields: 100}
		if why := st.apply(schemaRecord(schemaValue{Subject: "s", Version: 1, ID: 1, Schema: schemaA})); why != "" {
			t.Fatal(why)
		}
		st.apply(Record{Offset: 1, Key: key, Value: value})
		if st.maxID > 2 || st.maxID < 1 {
			t.Fatalf("id counter is %d after one record", st.maxID)
		}
		if st.next != 2 {
			t.Fatalf("next offset %d", st.next)
		}
		// Only a soft delete may come first; the version itself stays.
		if v := st.subjects["s"].find(1); v == nil || v.id != 1 {
			t.Fatalf("live version s/1 is now %+v", v)
		}
	})
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// FuzzCompatibility checks arbitrary pairs of schema texts against each
// other as a registration would, under small limits: whatever the texts,
// no panic escapes (a panic in the check's goroutine would end the
// process), the answer comes back, and a schema that passes the limits
// and parses is compatible with itself under FULL.
func FuzzCompatibility(f *testing.F) {
	for _, seed := range [][2]string{
		{`"int"`, `"long"`},
		{`["null","string"]`, `["string","null","int"]`},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`, `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":""}]}`},
		{`{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`, `{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]},{"name":"v","type":"int","default":0}]}`},
		{`{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}`, `{"type":"enum","name":"E","symbols":["A","B","C"]}`},
		{`{"type":"array","items":{"type":"map","values":["null",{"type":"fixed","name":"F","size":4}]}}`, `{"type":"array","items":{"type":"map","values":{"type":"fixed","name":"F","size":4}}}`},
		{`[{"type":"record","name":"A","fields":[]},{"type":"record","name":"B","fields":[]}]`, `{"type":"record","name":"B","aliases":["A"],"fields":[]}`},
		{`{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}`, `"bytes"`},
	} {
		f.Add(seed[0], seed[1], uint8(0))
	}
	for _, seed := range [][2]string{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":false}`},
		{`{"type":"object","properties":{"a":{"$ref":"#/definitions/n"}},"definitions":{"n":{"type":"number","maximum":5}}}`, `{"$ref":"#"}`},
		{`{"oneOf":[{"type":"string"},{"enum":[1,2]}]}`, `{"type":["string","null"],"minLength":2,"pattern":"^a"}`},
		{`true`, `false`},
	} {
		f.Add(seed[0], seed[1], uint8(1))
	}
	for _, seed := range [][2]string{
		{`syntax = "proto3"; package p; message A { int32 a = 1; oneof o { string s = 2; } }`, `syntax = "proto3"; package p; message A { int64 a = 1; string s = 2; message B { repeated A x = 1; } }`},
		{`syntax = "proto2"; message M { required group G = 1 { optional int32 a = 2; } map<string, M> m = 3; }`, `syntax = "proto3"; import "google/protobuf/any.proto"; message M { google.protobuf.Any a = 1; }`},
	} {
		f.Add(seed[0], seed[1], uint8(2))
	}
	lim := schemaLimits{maxBytes: 16 << 10, maxDepth: 32, maxNodes: 500, maxBranches: 50, maxFields: 50}
	srv := &Server{cfg: Config{Logger: quiet(), CheckTimeout: 10 * time.Second}, checks: make(chan struct{}, 1)}
	f.Fuzz(func(t *testing.T, a, b string, kind uint8) {
		typ := []string{typeAvro, typeJSON, typeProtobuf}[kind%3]
		var parsed []*schemaDoc
		for _, text := range []string{a, b} {
			s, err := parseSchema(typ, text, lim, nil, nil)
			if err != nil {
				return
			}
			parsed = append(parsed, s)
		}
		for _, level := range []string{Backward, Forward, FullTransitive} {
			if _, aerr := srv.checkWithin(t.Context(), level, parsed[0], []previous{{version: 1, schema: parsed[1]}}); aerr != nil {
				t.Fatalf("%s check of %s against %s: %v", level, a, b, aerr)
			}
		}
		for _, s := range parsed {
			if msgs, aerr := srv.checkWithin(t.Context(), Full, s, []previous{{version: 1, schema: s}}); aerr != nil || len(msgs) > 0 {
				t.Fatalf("%s is not compatible with itself: %v %v", s.Text, aerr, msgs)
			}
		}
	})
}
