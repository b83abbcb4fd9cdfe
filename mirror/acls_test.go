package mirror_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// testACL is one ACL as the test writes and compares them.
type testACL struct {
	typ       kmsg.ACLResourceType
	name      string
	pattern   kmsg.ACLResourcePatternType
	principal string
	op        kmsg.ACLOperation
	perm      kmsg.ACLPermissionType
}

func (a testACL) String() string {
	return fmt.Sprintf("%v %v %s:%s %v %v", a.perm, a.op, a.typ, a.name, a.pattern, a.principal)
}

func topicACL(name, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) testACL {
	return testACL{kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypeLiteral, principal, op, perm}
}

// With --sync-acls the source's topic ACLs follow the mirrored topics,
// read-only: what may read a topic in dc1 may read its copy, what may
// write it in dc1 gains nothing in the target, and the target's own ACLs
// stay. A grant added in the source later is copied too.
func TestMirrorSyncsTopicACLs(t *testing.T) {
	needServices(t)
	secured := testenv.WithConfig(func(c *broker.Config) {
		c.Authorizer = true
		c.SuperUsers = []string{"User:ANONYMOUS"} // the mirror and the test, on PLAINTEXT
	})
	src := testenv.StartBroker(t, secured)
	dst := testenv.StartBroker(t, secured)
	createTopic(t, []string{src.Addr}, "orders", 2)
	produce(t, []string{src.Addr}, "dc1", "orders", 2, 0, 10)
	scl, tcl := newClient(t, []string{src.Addr}), newClient(t, []string{dst.Addr})

	const (
		allow = kmsg.ACLPermissionTypeAllow
		deny  = kmsg.ACLPermissionTypeDeny
	)
	// The target's administrators gave erin Read on the copy themselves.
	own := topicACL("dc1.orders", "User:erin", kmsg.ACLOperationRead, allow)
	createACLs(t, tcl, own)
	rules := []struct {
		what   string
		source testACL
		target []testACL // what it becomes in the target; none: not copied
	}{
		{"a Read grant is copied", topicACL("orders", "User:alice", kmsg.ACLOperationRead, allow),
			[]testACL{topicACL("dc1.orders", "User:alice", kmsg.ACLOperationRead, allow)}},
		{"a Write grant is not", topicACL("orders", "User:alice", kmsg.ACLOperationWrite, allow), nil},
		{"All becomes Read", topicACL("orders", "User:bob", kmsg.ACLOperationAll, allow),
			[]testACL{topicACL("dc1.orders", "User:bob", kmsg.ACLOperationRead, allow)}},
		{"DescribeConfigs is copied", topicACL("orders", "User:carol", kmsg.ACLOperationDescribeConfigs, allow),
			[]testACL{topicACL("dc1.orders", "User:carol", kmsg.ACLOperationDescribeConfigs, allow)}},
		{"Delete is not", topicACL("orders", "User:carol", kmsg.ACLOperationDelete, allow), nil},
		{"AlterConfigs is not", topicACL("orders", "User:carol", kmsg.ACLOperationAlterConfigs, allow), nil},
		{"a deny is copied", topicACL("orders", "User:dave", kmsg.ACLOperationRead, deny),
			[]testACL{topicACL("dc1.orders", "User:dave", kmsg.ACLOperationRead, deny)}},
		{"a deny of everyone is not (it would stop the mirror's resume)", topicACL("orders", "User:*", kmsg.ACLOperationRead, deny), nil},
		{"a prefixed ACL is not", testACL{kmsg.ACLResourceTypeTopic, "ord", kmsg.ACLResourcePatternTypePrefixed, "User:alice", kmsg.ACLOperationRead, allow}, nil},
		{"the wildcard topic is not", topicACL("*", "User:alice", kmsg.ACLOperationRead, allow), nil},
		{"a topic not mirrored is not", topicACL("secret", "User:alice", kmsg.ACLOperationRead, allow), nil},
		{"a group ACL is not", testACL{kmsg.ACLResourceTypeGroup, "readers", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead, allow}, nil},
	}
	want := []testACL{own}
	for _, r := range rules {
		createACLs(t, scl, r.source)
		want = append(want, r.target...)
	}

	runMirror(t, mirror.Config{Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{src.Addr}}}, Target: []string{dst.Addr},
		Topics: "^orders$", Rename: "{source}.{topic}", SyncACLs: true, ACLSyncInterval: 100 * time.Millisecond})
	waitForACLs(t, tcl, want)
	// Later grants follow; after a further sync the dropped ones are still
	// absent.
	frank := topicACL("orders", "User:frank", kmsg.ACLOperationRead, allow)
	createACLs(t, scl, frank)
	frank.name = "dc1.orders"
	waitForACLs(t, tcl, append(want, frank))
	waitForCount(t, []string{dst.Addr}, "dc1.orders", 20, time.Minute)
}

func createACLs(t *testing.T, cl *kgo.Client, acls ...testACL) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = a.typ, a.name, a.pattern
		c.Principal, c.Host, c.Operation, c.PermissionType = a.principal, "*", a.op, a.perm
		req.Creations = append(req.Creations, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("creating %v: %v", acls[i], err)
		}
	}
}

// waitForACLs waits until a cluster's ACLs are exactly want.
func waitForACLs(t *testing.T, cl *kgo.Client, want []testACL) {
	t.Helper()
	sorted := func(acls []testACL) string {
		var s []string
		for _, a := range acls {
			s = append(s, a.String())
		}
		slices.Sort(s)
		return strings.Join(s, "\n")
	}
	testenv.Eventuallyf(t, time.Minute, func() (bool, string) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return false, err.Error()
		}
		var got []testACL
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				got = append(got, testACL{r.ResourceType, r.ResourceName, r.ResourcePatternType, a.Principal, a.Operation, a.PermissionType})
			}
		}
		g, w := sorted(got), sorted(want)
		return g == w, fmt.Sprintf("the target's ACLs:\n%s\nwant:\n%s", g, w)
	})
}
