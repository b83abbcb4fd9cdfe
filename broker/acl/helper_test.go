package acl

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFilter: the allowed items are served in their order, each
// refused one is answered, and a request with nothing refused comes back
// as it was, with nothing allocated (the hot paths without an authorizer).
func TestFilter(t *testing.T) {
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
		kept, refused := Filter(c.items, allowed, refuse)
		if !slices.Equal(kept, c.kept) || !slices.Equal(refused, c.refused) || (c.refused != nil && kept == nil) {
			t.Errorf("%q: kept %q refused %q, want %q and %q", c.items, kept, refused, c.kept, c.refused)
		}
	}
	items := []string{"a", "b", "c"}
	if n := testing.AllocsPerRun(100, func() { Filter(items, allowed, refuse) }); n != 0 {
		t.Errorf("%v allocations for a request with nothing refused", n)
	}
	// The kept items are a copy: the request's own are left as they were.
	src := []string{"a", "x", "b"}
	kept, _ := Filter(src, allowed, refuse)
	kept[0], kept[1] = "changed", "changed"
	if !slices.Equal(src, []string{"a", "x", "b"}) {
		t.Errorf("the request's items were written over: %q", src)
	}
}

// TestHelperDecides: without an authorizer (a nil *Authorizer) every
// question is allowed; with one, the helper asks it for who's principal
// and host, and a config resource is refused with its resource's code.
func TestHelperDecides(t *testing.T) {
	var none *Authorizer
	alice := Who{Principal: "User:alice", Host: "10.0.0.1"}
	if !none.MayTopic(alice, kmsg.ACLOperationWrite, "t") || !none.MayCluster(alice, kmsg.ACLOperationAlter) {
		t.Fatal("no authorizer refused a request")
	}
	z, err := New(NewFile(filepath.Join(t.TempDir(), "acls.json")), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := z.Update(func([]ACL) []ACL {
		return []ACL{{Principal: "User:alice", Host: "10.0.0.1", ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t",
			PatternType: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAllow}}
	}); err != nil {
		t.Fatal(err)
	}
	if !z.MayTopic(alice, kmsg.ACLOperationWrite, "t") {
		t.Error("alice may not write t from her host")
	}
	if z.MayTopic(Who{Principal: "User:alice", Host: "10.0.0.2"}, kmsg.ACLOperationWrite, "t") {
		t.Error("alice may write t from another host")
	}
	if z.MayTxn(alice, kmsg.ACLOperationWrite, "t") {
		t.Error("an ACL on topic t let alice write the transactional id t")
	}
	if msg := z.TopicRefusal(alice, kmsg.ACLOperationWrite, "write", "u"); msg == "" {
		t.Error("no refusal for a topic without an ACL")
	}
	if code, ok := z.MayConfig(alice, kmsg.ACLOperationAlterConfigs, kmsg.ConfigResourceTypeTopic, "t"); ok || code != TopicRefused {
		t.Errorf("topic config: %d %v, want TOPIC_AUTHORIZATION_FAILED", code, ok)
	}
	if code, ok := z.MayConfig(alice, kmsg.ACLOperationAlterConfigs, kmsg.ConfigResourceTypeBroker, "1"); ok || code != ClusterRefused {
		t.Errorf("broker config: %d %v, want CLUSTER_AUTHORIZATION_FAILED", code, ok)
	}
}
