package broker

import (
	"slices"
	"testing"
)

// TestFilterAuthorized: the allowed items are served in their order, each
// refused one is answered, and a request with nothing refused comes back
// as it was, with nothing allocated (the hot paths without an authorizer).
func TestFilterAuthorized(t *testing.T) {
	allowed := func(s string) bool { return s[0] != 'x' }
	refuse := func(s string) string { return "refused " + s }
	for _, c := range []struct {
		items, kept, refused []string
	}{
		{nil, nil, nil},
		{[]string{"a", "b"}, []string{"a", "b"}, nil},
		{[]string{"x1", "a", "x2", "b"}, []string{"a", "b"}, []string{"refused x1", "refused x2"}},
		{[]string{"a", "x1"}, []string{"a"}, []string{"refused x1"}},
		{[]string{"x1"}, []string{}, []string{"refused x1"}},
	} {
		kept, refused := filterAuthorized(c.items, allowed, refuse)
		if !slices.Equal(kept, c.kept) || !slices.Equal(refused, c.refused) || (c.refused != nil && kept == nil) {
			t.Errorf("%q: kept %q refused %q, want %q and %q", c.items, kept, refused, c.kept, c.refused)
		}
	}
	items := []string{"a", "b", "c"}
	if n := testing.AllocsPerRun(100, func() { filterAuthorized(items, allowed, refuse) }); n != 0 {
		t.Errorf("%v allocations for a request with nothing refused", n)
	}
	// The kept items are a copy: the request's own are left as they were.
	src := []string{"a", "x", "b"}
	kept, _ := filterAuthorized(src, allowed, refuse)
	kept[0], kept[1] = "changed", "changed"
	if !slices.Equal(src, []string{"a", "x", "b"}) {
		t.Errorf("the request's items were written over: %q", src)
	}
}
