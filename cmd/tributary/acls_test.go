package main_test

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
)

// `tributary acls` grants, lists and removes ACLs on a standalone broker
// whose only listener is SASL_PLAINTEXT with ACLs enforced, and the broker
// acts on them: alice may produce to a topic once the super user allows
// it, only there, and no more once it is removed.
func TestACLsCLI(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	_, login := startSASLStandalone(t, "alice")
	as := func(user string, args ...string) []string { return append(args, login(user)...) }
	acls := func(args ...string) string {
		t.Helper()
		return testenv.Run(t, "", 0, as("admin", append([]string{"acls"}, args...)...)...)
	}
	// produce is alice producing one record to topic; refused, the
	// broker's reason is on stderr.
	produce := func(topic string, want int) string {
		t.Helper()
		_, stderr := testenv.RunBoth(t, "hello\n", want, as("alice", "produce", "--topic", topic)...)
		return stderr
	}
	refused := func(topic string) {
		t.Helper()
		if stderr := produce(topic, 1); !strings.Contains(stderr, "TOPIC_AUTHORIZATION_FAILED") {
			t.Fatalf("alice producing to %s: want TOPIC_AUTHORIZATION_FAILED, got\n%s", topic, stderr)
		}
	}
	testenv.Run(t, "", 0, append(as("admin", "topics", "create"), "orders", "payments", "logs-web")...)
	refused("orders")

	out := acls("add", "--allow", "User:alice", "--operation", "write", "--topic", "orders")
	if want := "added: ALLOW User:alice from * to WRITE topic orders\n"; out != want {
		t.Fatalf("acls add printed %q, want %q", out, want)
	}
	acls("add", "--allow", "User:alice", "--operation", "read,describe", "--topic", "orders")
	acls("add", "--allow", "User:alice", "--operation", "write", "--topic", "logs-", "--prefixed")
	// A deny from another address leaves alice's own connections alone.
	acls("add", "--deny", "User:alice", "--host", "10.0.0.7", "--operation", "all", "--topic", "orders")
	produce("orders", 0)
	produce("logs-web", 0)
	refused("payments")
	if out := acls("list", "--host", "10.0.0.7"); strings.Count(out, "\n") != 2 || !testenv.HasRow(out, "DENY User:alice 10.0.0.7 ALL topic literal orders") {
		t.Fatalf("acls list --host 10.0.0.7: want the one deny, got\n%s", out)
	}

	out = acls("list")
	for _, want := range []string{
		"PERMISSION PRINCIPAL HOST OPERATION RESOURCE PATTERN NAME",
		"ALLOW User:alice * WRITE topic literal orders",
		"ALLOW User:alice * READ topic literal orders",
		"ALLOW User:alice * WRITE topic prefixed logs-",
		"DENY User:alice 10.0.0.7 ALL topic literal orders",
	} {
		if !testenv.HasRow(out, want) {
			t.Fatalf("acls list lacks %q:\n%s", want, out)
		}
	}
	if out := acls("list", "--topic", "logs-", "--prefixed"); strings.Contains(out, "orders") || !strings.Contains(out, "logs-") {
		t.Fatalf("acls list --topic logs- --prefixed:\n%s", out)
	}
	if stderr := testenv.RunStderr(t, 1, as("alice", "acls", "list")...); !strings.Contains(stderr, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("acls list by alice, without DESCRIBE on the cluster: want the broker's refusal, got\n%s", stderr)
	}

	// remove takes exactly what its filter names: the write on orders,
	// not the read beside it nor the prefixed write.
	out = acls("remove", "--allow", "User:alice", "--operation", "write", "--topic", "orders")
	if want := "removed: ALLOW User:alice from * to WRITE topic orders\n"; out != want {
		t.Fatalf("acls remove printed %q, want %q", out, want)
	}
	refused("orders")
	produce("logs-web", 0)
	out = acls("list", "--allow", "User:alice")
	if testenv.HasRow(out, "ALLOW User:alice * WRITE topic literal orders") || !testenv.HasRow(out, "ALLOW User:alice * READ topic literal orders") || !strings.Contains(out, "logs-") {
		t.Fatalf("after removing alice's write on orders, list shows:\n%s", out)
	}
	if out := acls("remove", "--deny", "User:alice", "--topic", "orders"); out != "removed: DENY User:alice from 10.0.0.7 to ALL topic orders\n" {
		t.Fatalf("acls remove of alice's denies on orders printed %q", out)
	}
	if out := acls("remove", "--deny", "User:alice", "--topic", "orders"); out != "no ACL matches: nothing removed\n" {
		t.Fatalf("acls remove matching nothing printed %q", out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "--allow", "alice", "--operation", "write", "--topic", "orders"}, "User:<name>"},
		{[]string{"add", "--allow", "User:alice", "--operation", "wirte", "--topic", "orders"}, `--operation "wirte"`},
		{[]string{"add", "--allow", "User:alice", "--topic", "orders"}, "needs --operation"},
		{[]string{"add", "--allow", "User:alice", "--operation", "read"}, "needs a resource"},
		{[]string{"add", "--operation", "read", "--topic", "orders"}, "needs a principal"},
		{[]string{"add", "--allow", "User:alice", "--operation", "read", "--topic", "orders", "--host", "localhost"}, "IP address"},
		{[]string{"add", "--allow", "User:alice", "--operation", "alter", "--cluster", "--prefixed"}, "--prefixed with --cluster"},
		{[]string{"remove"}, "needs a principal"},
	} {
		if stderr := testenv.RunStderr(t, 1, as("admin", append([]string{"acls"}, c.args...)...)...); !strings.Contains(stderr, c.want) {
			t.Errorf("acls %v: want an error with %q, got\n%s", c.args, c.want, stderr)
		}
	}
}
