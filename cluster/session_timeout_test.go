package cluster_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestBrokerSessionTimeoutDefault: ZooKeeper grants a broker that asks for
// nothing else a session of DefaultBrokerSessionTimeout, 4 s: a killed
// broker's registration then goes 4-6 s after its last ping at ZooKeeper's
// default tick of 2 s, and its partitions have new leaders within 8 s of a
// kill -9 (the 6 s of before ended 6.4-7.8 s after the kill, 8.5 s with the
// controller's work). WithSessionTimeout still sets another. Read from the
// server's own list of sessions (the cons four-letter word).
func TestBrokerSessionTimeoutDefault(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	for _, c := range []struct {
		opts []cluster.ZKOption
		want time.Duration
	}{
		{nil, 4 * time.Second},
		{[]cluster.ZKOption{cluster.WithSessionTimeout(7 * time.Second)}, 7 * time.Second},
	} {
		z := join(t, connect, 1, c.opts...)
		if got := grantedTimeout(t, connect, z.Session().Conn.SessionID()); got != c.want {
			t.Errorf("options %v: ZooKeeper granted the broker a session of %v, want %v", c.opts, got, c.want)
		}
		z.Close()
	}
}

// grantedTimeout is the timeout ZooKeeper gave session id, from cons.
func grantedTimeout(t *testing.T, connect string, id int64) time.Duration {
	t.Helper()
	servers, _, err := cluster.ParseZKConnect(connect)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", servers[0], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("cons")); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	sid := fmt.Sprintf("sid=0x%x,", id)
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, sid) {
			continue
		}
		for _, f := range strings.Split(line, ",") {
			if ms, ok := strings.CutPrefix(f, "to="); ok {
				var n int
				if _, err := fmt.Sscan(ms, &n); err != nil {
					t.Fatalf("cons: %q: %v", f, err)
				}
				return time.Duration(n) * time.Millisecond
			}
		}
	}
	t.Fatalf("session 0x%x not in ZooKeeper's cons:\n%s", id, out)
	return 0
}
