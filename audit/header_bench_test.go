package audit_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/schema"
)

// strictPageView returns a strict header reader and one serialized page
// view it can read.
func strictPageView(tb testing.TB) (*audit.HeaderReader, []byte) {
	tb.Helper()
	env := audittest.Start(tb)
	pv, err := os.ReadFile(pageviewSchema)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := schema.NewSerializer(env.Registry, schema.SerializerConfig{Schema: string(pv), Server: "fe-9", Service: "test"})
	if err != nil {
		tb.Fatal(err)
	}
	v, err := s.Serialize(context.Background(), "pageview", map[string]any{
		"header": map[string]any{"time": time.Date(2024, 5, 1, 10, 3, 0, 0, time.UTC)}, "memberId": int64(1), "pageKey": "home"})
	if err != nil {
		tb.Fatal(err)
	}
	hr, err := audit.NewHeaderReader(env.Registry, audit.HeaderReaderConfig{Strict: true})
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := hr.Read(context.Background(), v); err != nil { // the layout, cached
		tb.Fatal(err)
	}
	return hr, v
}

// A strict read checks the whole body without decoding it: its only
// allocation is the server's name, however many fields the event has.
func TestStrictHeaderReadDoesNotDecode(t *testing.T) {
	hr, v := strictPageView(t)
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := hr.Read(context.Background(), v); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("a strict header read allocates %v times; want at most 1 (the server's name): the value is decoded", allocs)
	}
}

// BenchmarkStrictHeaderRead is what a tier's count costs per record:
//
//	go test -run '^$' -bench BenchmarkStrictHeaderRead ./audit/
func BenchmarkStrictHeaderRead(b *testing.B) {
	hr, v := strictPageView(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if _, _, err := hr.Read(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
}
