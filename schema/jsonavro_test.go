package schema_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/schema"
)

// Lines of plain JSON become goavro's native form for the pageview
// schema; lines that do not fit say which field is wrong.
func TestJSONEvents(t *testing.T) {
	j, err := schema.NewJSONEvents(readSchema(t, "pageview.avsc"), "header")
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		line string
		want map[string]any // fields checked
		err  string
	}{
		{line: `{"memberId": 7, "pageKey": "home"}`, want: map[string]any{"memberId": int64(7), "pageKey": "home"}},
		{line: `{"memberId": 7, "pageKey": "home", "referrer": "r"}`, want: map[string]any{"referrer": map[string]any{"string": "r"}}},
		{line: `{"memberId": 7, "pageKey": "home", "referrer": {"string": "r"}}`, want: map[string]any{"referrer": map[string]any{"string": "r"}}},
		{line: `{"memberId": 7, "pageKey": "home", "referrer": null}`, want: map[string]any{"referrer": nil}},
		{line: `{"header": {"time": 1714557600000}, "memberId": 7, "pageKey": "home"}`, want: map[string]any{"header": map[string]any{"time": when}}},
		{line: `{"header": {"time": "2024-05-01T10:00:00Z", "guid": "000102030405060708090a0b0c0d0e0f"}, "memberId": 7, "pageKey": "home"}`,
			want: map[string]any{"header": map[string]any{"time": when, "guid": []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}}},
		{line: `{"memberId": "7", "pageKey": "home"}`, err: "field memberId is a string, want an integer"},
		{line: `{"memberId": 7, "pageKey": "home", "durationMs": 3000000000}`, err: "durationMs: 3000000000 is not a 32-bit integer"},
		{line: `{"memberId": 7, "pageKey": "home", "colour": "red"}`, err: "field colour is not in the schema"},
		{line: `{"header": {"time": "yesterday"}}`, err: `field header.time: "yesterday" is not RFC 3339`},
		{line: `[1, 2]`, err: "the event is an array, want an object"},
		{line: `{"memberId": 7} {}`, err: "more than one JSON value"},
	} {
		got, err := j.Decode([]byte(tc.line))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		for k, v := range tc.want {
			if !equalNative(got[k], v) {
				t.Errorf("%s: %s = %#v, want %#v", tc.line, k, got[k], v)
			}
		}
	}
}

// equalNative compares the wanted fields of native values.
func equalNative(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !equalNative(g[k], v) {
				return false
			}
		}
		return true
	case []byte:
		g, ok := got.([]byte)
		return ok && string(g) == string(w)
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(w)
	}
	return got == want
}
