package schema_test

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// readSchema reads a schema from the repository's testdata/schemas.
func readSchema(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "schemas", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// staticRegistry serves fixed schemas by id and counts calls, for tests
// that need no HTTP (fuzzing, benchmarks, caching).
type staticRegistry struct {
	mu      sync.Mutex
	byID    map[int]string
	calls   int
	nextID  int
	subject map[string]int
}

func newStaticRegistry(schemas ...string) *staticRegistry {
	r := &staticRegistry{byID: map[int]string{}, subject: map[string]int{}}
	for i, s := range schemas {
		r.byID[i+1] = s
	}
	r.nextID = len(schemas) + 1
	return r
}

func (r *staticRegistry) SchemaByID(_ context.Context, id int) (sr.Schema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	s, ok := r.byID[id]
	if !ok {
		return sr.Schema{}, &sr.ResponseError{StatusCode: 404, ErrorCode: 40403, Message: fmt.Sprintf("Schema %d not found", id)}
	}
	return sr.Schema{Schema: s}, nil
}

func (r *staticRegistry) RegisterSchema(_ context.Context, subject string, s sr.Schema, _, _ int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	for id, text := range r.byID {
		if text == s.Schema {
			r.subject[subject] = id
			return id, nil
		}
	}
	id := r.nextID
	r.nextID++
	r.byID[id] = s.Schema
	r.subject[subject] = id
	return id, nil
}

func (r *staticRegistry) LookupSchema(_ context.Context, subject string, s sr.Schema) (sr.SubjectSchema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	id, ok := r.subject[subject]
	if !ok || r.byID[id] != s.Schema {
		return sr.SubjectSchema{}, &sr.ResponseError{StatusCode: 404, ErrorCode: 40403, Message: "Schema not found"}
	}
	return sr.SubjectSchema{Subject: subject, ID: id}, nil
}

// pageView is a page-view event in goavro's native form, header included.
func pageView(i int) map[string]any {
	return map[string]any{
		"header": map[string]any{
			"time":    time.UnixMilli(1_700_000_000_000 + int64(i)).UTC(),
			"server":  "fe-01",
			"service": "frontend",
			"guid":    []byte("0123456789abcdef"),
		},
		"memberId":   int64(1000 + i),
		"pageKey":    "profile",
		"referrer":   map[string]any{"string": "https://example.com/search?q=kafka"},
		"userAgent":  nil,
		"locale":     "en_US",
		"durationMs": int32(42),
	}
}

// canon makes decoded values comparable with reflect.DeepEqual: *big.Rat
// and time.Time have no useful ==, and map order does not matter.
func canon(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = canon(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canon(e)
		}
		return out
	case *big.Rat:
		return "rat:" + x.RatString()
	case time.Time:
		return fmt.Sprintf("time:%d", x.UnixNano())
	}
	return v
}

func sameValue(a, b any) bool { return reflect.DeepEqual(canon(a), canon(b)) }

func show(v any) string {
	if m, ok := canon(v).(map[string]any); ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%#v ", k, m[k])
		}
		return b.String()
	}
	return fmt.Sprintf("%#v", canon(v))
}
