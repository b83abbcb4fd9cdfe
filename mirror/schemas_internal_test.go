package mirror

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/schema"
)

// fakeRegistry answers from a map and counts the calls.
type fakeRegistry struct {
	byID     map[int]string
	ids      map[string]int // schema text → id, for RegisterSchema
	fail     error          // returned by every call when set
	calls    int
	register map[string]int // subject → registrations
}

func (f *fakeRegistry) SchemaByID(_ context.Context, id int) (sr.Schema, error) {
	f.calls++
	if f.fail != nil {
		return sr.Schema{}, f.fail
	}
	s, ok := f.byID[id]
	if !ok {
		return sr.Schema{}, &sr.ResponseError{StatusCode: http.StatusNotFound, ErrorCode: 40403, Message: "Schema not found"}
	}
	return sr.Schema{Schema: s}, nil
}

func (f *fakeRegistry) RegisterSchema(_ context.Context, subject string, s sr.Schema, _, _ int) (int, error) {
	f.calls++
	if f.fail != nil {
		return 0, f.fail
	}
	if f.register == nil {
		f.register = map[string]int{}
	}
	f.register[subject]++
	return f.ids[s.Schema], nil
}

func (f *fakeRegistry) LookupSchema(context.Context, string, sr.Schema) (sr.SubjectSchema, error) {
	return sr.SubjectSchema{}, errors.New("not used")
}

func TestSchemaMap(t *testing.T) {
	ctx := context.Background()
	src := &fakeRegistry{byID: map[int]string{7: `"string"`}}
	dst := &fakeRegistry{ids: map[string]int{`"string"`: 42}}
	m := newSchemaMap(src, dst, slog.New(slog.NewTextHandler(io.Discard, nil)))
	value := append(schema.AppendEnvelope(nil, 7), "body"...)

	for range 3 {
		out, err := m.rewrite(ctx, "t", value)
		if err != nil {
			t.Fatal(err)
		}
		id, body, _ := schema.DecodeEnvelope(out)
		if id != 42 || string(body) != "body" {
			t.Fatalf("rewritten to id %d body %q, want 42 %q", id, body, "body")
		}
	}
	if src.calls != 1 || dst.register["t-value"] != 1 {
		t.Fatalf("%d source lookups, %d target registrations for 3 records: the mapping is not cached", src.calls, dst.register["t-value"])
	}
	if id, _, _ := schema.DecodeEnvelope(value); id != 7 {
		t.Fatal("rewrite modified the fetched record's value in place")
	}

	// Another subject with the same source id is registered there too.
	if _, err := m.rewrite(ctx, "u", value); err != nil || dst.register["u-value"] != 1 {
		t.Fatalf("subject u-value: err %v, registrations %d", err, dst.register["u-value"])
	}

	if out, err := m.rewrite(ctx, "t", []byte("plain")); !errors.Is(err, errNotEnvelope) || string(out) != "plain" {
		t.Fatalf("plain value: %q, %v", out, err)
	}
	var unresolved *unresolvedError
	if _, err := m.rewrite(ctx, "t", schema.AppendEnvelope(nil, 8)); !errors.As(err, &unresolved) {
		t.Fatalf("unknown id: %v, want an unresolvedError", err)
	}
	src.fail = errors.New("connection refused")
	if _, err := m.rewrite(ctx, "t", schema.AppendEnvelope(nil, 9)); err == nil || errors.As(err, &unresolved) {
		t.Fatalf("unreachable registry: %v, want an error worth retrying", err)
	}
}

func TestWindowCounter(t *testing.T) {
	w := &WindowCounter{Window: time.Minute}
	at := time.Date(2011, 6, 1, 10, 0, 30, 0, time.UTC)
	for _, r := range []*kgo.Record{
		{Topic: "a", Timestamp: at}, {Topic: "a", Timestamp: at.Add(20 * time.Second)},
		{Topic: "a", Timestamp: at.Add(40 * time.Second)}, {Topic: "b", Timestamp: at},
	} {
		w.Copied("dc1", r)
	}
	got := w.Counts()
	want := []WindowCount{
		{WindowKey{"dc1", "a", at.Truncate(time.Minute)}, 2},
		{WindowKey{"dc1", "b", at.Truncate(time.Minute)}, 1},
		{WindowKey{"dc1", "a", at.Truncate(time.Minute).Add(time.Minute)}, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("window %d: got %v, want %v", i, got[i], want[i])
		}
	}
	w.Forget(at.Truncate(time.Minute).Add(time.Minute))
	if len(w.Counts()) != 1 {
		t.Fatalf("after Forget: %v", w.Counts())
	}
	// Counting a window a day later forgets the ones a day older.
	w.Keep = 24 * time.Hour
	w.Copied("dc1", &kgo.Record{Topic: "a", Timestamp: at.Add(25 * time.Hour)})
	if c := w.Counts(); len(c) != 1 || c[0].Start != at.Add(25*time.Hour).Truncate(time.Minute) {
		t.Fatalf("after a day: %v", c)
	}
}

// Every failed attempt that retry retries is counted in the mirror's error
// metric, so an operator sees which side the mirror is waiting on.
func TestRetryCountsFailures(t *testing.T) {
	failures := newEvents().failures.WithLabelValues("target")
	attempts := 0
	v, err := retry(context.Background(), slog.New(slog.DiscardHandler), failures, "a flaky call", func() (int, error) {
		attempts++
		if attempts < 3 {
			return 0, errors.New("not yet")
		}
		return 7, nil
	})
	if v != 7 || err != nil {
		t.Fatalf("retry returned %d, %v", v, err)
	}
	if got := testutil.ToFloat64(failures); got != 2 {
		t.Errorf("failures counted: %v, want 2", got)
	}
}
