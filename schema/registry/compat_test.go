package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/twmb/franz-go/pkg/sr"
)

// rec builds a record schema named R from "name:type[=default]" fields.
func rec(fields ...string) string {
	var fs []string
	for _, f := range fields {
		name, typ, _ := strings.Cut(f, ":")
		typ, def, hasDef := strings.Cut(typ, "=")
		s := fmt.Sprintf(`{"name":%q,"type":%q`, name, typ)
		if hasDef {
			s += `,"default":` + def
		}
		fs = append(fs, s+"}")
	}
	return `{"type":"record","name":"R","fields":[` + strings.Join(fs, ",") + `]}`
}

// Each level gets a history (registered under NONE), then one schema that
// must pass and one that must fail. The transitive levels' failing schema
// passes against the latest version and fails only against an older one.
var compatCases = []struct {
	level      string
	history    []string
	pass, fail string
}{
	{
		level:   "BACKWARD",
		history: []string{rec("a:string")},
		pass:    rec("a:string", `b:int=0`),
		fail:    rec("a:string", "b:int"),
	},
	{
		level:   "BACKWARD_TRANSITIVE",
		history: []string{rec("a:string"), rec()},
		pass:    rec(`a:string=""`),
		fail:    rec("a:int=0"),
	},
	{
		level:   "FORWARD",
		history: []string{rec("a:string")},
		pass:    rec("a:string", "b:int"),
		fail:    rec(),
	},
	{
		level:   "FORWARD_TRANSITIVE",
		history: []string{rec("a:string"), rec(`a:string="x"`)},
		pass:    rec(`a:string="x"`, "c:int"),
		fail:    rec(),
	},
	{
		level:   "FULL",
		history: []string{rec("a:string")},
		pass:    rec("a:string", "b:int=0"),
		fail:    rec("a:string", "b:int"),
	},
	{
		level:   "FULL_TRANSITIVE",
		history: []string{rec("a:string"), rec(`a:string=""`)},
		pass:    rec(`a:string=""`, "b:int=0"),
		fail:    rec(),
	},
	{
		level:   "NONE",
		history: []string{rec("a:string")},
		pass:    rec("a:int"),
		fail:    "", // nothing is incompatible under NONE
	},
}

// TestCompatibilityLevels drives every level through pkg/sr (a client we did
// not write) and through raw HTTP.
func TestCompatibilityLevels(t *testing.T) {
	for _, tc := range compatCases {
		t.Run(tc.level, func(t *testing.T) {
			ctx := context.Background()
			r := srtest.Start(t)
			subject := "s-value"
			set := func(level string) {
				t.Helper()
				var lvl sr.CompatibilityLevel
				if err := lvl.UnmarshalText([]byte(level)); err != nil {
					t.Fatal(err)
				}
				res := r.Client.SetCompatibility(ctx, sr.SetCompatibility{Level: lvl}, subject)
				if res[0].Err != nil {
					t.Fatalf("set %s: %v", level, res[0].Err)
				}
			}
			set("NONE")
			for _, h := range tc.history {
				if _, err := r.Client.RegisterSchema(ctx, subject, sr.Schema{Schema: h}, -1, -1); err != nil {
					t.Fatalf("history %s: %v", h, err)
				}
			}
			set(tc.level)
			if got := r.Client.Compatibility(ctx, subject); got[0].Err != nil || got[0].Level.String() != tc.level {
				t.Fatalf("level is %v (%v), want %s", got[0].Level, got[0].Err, tc.level)
			}

			// Dry runs against every version registration would check
			// (version -2 in pkg/sr), through the client and raw HTTP.
			check := func(schema string, want bool) {
				t.Helper()
				res, err := r.Client.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), subject, -2, sr.Schema{Schema: schema})
				if err != nil || res.Is != want {
					t.Errorf("sr: check %s: is_compatible=%v (%v), want %v; messages %q", schema, res.Is, err, want, res.Messages)
				}
				if !want && len(res.Messages) == 0 {
					t.Errorf("sr: check %s: incompatible without messages", schema)
				}
				code, body := post(t, r.URL+"/compatibility/subjects/"+subject+"/versions", schema)
				var raw struct {
					Is *bool `json:"is_compatible"`
				}
				if json.Unmarshal(body, &raw); code != 200 || raw.Is == nil || *raw.Is != want {
					t.Errorf("http: check %s: %d %s, want is_compatible %v", schema, code, body, want)
				}
			}
			check(tc.pass, true)
			if tc.fail != "" {
				check(tc.fail, false)

				_, err := r.Client.RegisterSchema(ctx, subject, sr.Schema{Schema: tc.fail}, -1, -1)
				var re *sr.ResponseError
				if !errors.As(err, &re) || re.StatusCode != 409 || re.ErrorCode != 409 || re.SchemaError() != sr.ErrIncompatibleSchema {
					t.Errorf("sr: register incompatible: %v, want 409 INCOMPATIBLE_SCHEMA", err)
				}
				if code, body := post(t, r.URL+"/subjects/"+subject+"/versions", tc.fail); code != 409 || !strings.Contains(string(body), `"error_code":409`) {
					t.Errorf("http: register incompatible: %d %s", code, body)
				}
			}
			id, err := r.Client.RegisterSchema(ctx, subject, sr.Schema{Schema: tc.pass}, -1, -1)
			if err != nil {
				t.Fatalf("sr: register compatible: %v", err)
			}
			if code, body := post(t, r.URL+"/subjects/"+subject+"/versions", tc.pass); code != 200 || string(body) != fmt.Sprintf(`{"id":%d}`, id) {
				t.Errorf("http: register compatible again: %d %s, want id %d", code, body, id)
			}
		})
	}
}

// TestCompatibilityAgainstOneVersion checks the single-version endpoint:
// only the named version counts, whatever the level.
func TestCompatibilityAgainstOneVersion(t *testing.T) {
	ctx := context.Background()
	r := srtest.Start(t)
	r.Client.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "s")
	for _, h := range []string{rec("a:string"), rec("b:string")} {
		if _, err := r.Client.RegisterSchema(ctx, "s", sr.Schema{Schema: h}, -1, -1); err != nil {
			t.Fatal(err)
		}
	}
	r.Client.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackwardTransitive}, "s")
	next := rec("b:string", "c:int=0")
	for _, tc := range []struct {
		version int
		want    bool
	}{{1, false}, {2, true}, {-1, true}} {
		res, err := r.Client.CheckCompatibility(ctx, "s", tc.version, sr.Schema{Schema: next})
		if err != nil || res.Is != tc.want {
			t.Errorf("against version %d: %v (%v), want %v", tc.version, res.Is, err, tc.want)
		}
		if res.Messages != nil {
			t.Errorf("against version %d: messages %q without verbose", tc.version, res.Messages)
		}
	}
	res, err := r.Client.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "s", 1, sr.Schema{Schema: next})
	if err != nil || res.Is || len(res.Messages) == 0 || !strings.Contains(strings.Join(res.Messages, " "), "version 1") {
		t.Errorf("verbose: %+v (%v), want messages naming version 1", res, err)
	}
	_, err = r.Client.CheckCompatibility(ctx, "s", 7, sr.Schema{Schema: next})
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != 40402 {
		t.Errorf("missing version: %v, want 40402", err)
	}
	// Nothing to be incompatible with: a new subject accepts anything.
	if res, err := r.Client.CheckCompatibility(ctx, "new", -1, sr.Schema{Schema: next}); err != nil || !res.Is {
		t.Errorf("new subject: %+v (%v), want compatible", res, err)
	}
	// An invalid schema is 42201, or a message when verbose.
	_, err = r.Client.CheckCompatibility(ctx, "s", -1, sr.Schema{Schema: "{"})
	if !errors.As(err, &re) || re.ErrorCode != 42201 {
		t.Errorf("invalid schema: %v, want 42201", err)
	}
	if res, err := r.Client.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "s", -1, sr.Schema{Schema: "{"}); err != nil || res.Is || len(res.Messages) != 1 {
		t.Errorf("invalid schema, verbose: %+v (%v)", res, err)
	}
}

func post(t *testing.T, url, schema string) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"schema": schema})
	resp, err := http.Post(url, "application/vnd.schemaregistry.v1+json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
