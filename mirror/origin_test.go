package mirror

import "testing"

// The origin header's hops: written by appendHop, read back by lastHop,
// visited and firstHop, including headers of older mirrors (a name only)
// and values that are not origin headers at all.
func TestOriginHops(t *testing.T) {
	one := appendHop(nil, hop{"dc1", 3, 1042})
	if string(one) != "dc1/3/1042" {
		t.Fatalf("one hop: %q", one)
	}
	two := appendHop(one, hop{"analysis", 0, 77})
	if string(two) != "dc1/3/1042,analysis/0/77" {
		t.Fatalf("two hops: %q", two)
	}
	if h, ok := lastHop(two); !ok || h != (hop{"analysis", 0, 77}) {
		t.Fatalf("lastHop(%q) = %+v, %v", two, h, ok)
	}
	if firstHop(two) != "dc1" || !visited(two, "dc1") || !visited(two, "analysis") || visited(two, "dc2") {
		t.Fatalf("firstHop/visited of %q", two)
	}
	old := appendHop([]byte("dc1"), hop{"analysis", 2, 5})
	if h, ok := lastHop([]byte("dc1")); !ok || h.partition != -1 || !visited(old, "dc1") {
		t.Fatalf("a name-only hop of an older mirror: %+v %v", h, ok)
	}
	for _, bad := range []string{"", "dc 1/0/1", "dc1/x/1", "dc1/0/-1", "dc1/0", "dc1/0/1/2", "dc1/-3/1"} {
		if h, ok := lastHop([]byte(bad)); ok {
			t.Errorf("lastHop(%q) = %+v, want not an origin", bad, h)
		}
	}
}
