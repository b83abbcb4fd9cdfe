package main

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// --zookeeper-session-timeout reaches ZooKeeper: the session it grants the
// broker lasts what the flag says (ZooKeeper's cons lists it), and a
// timeout that is not positive is refused before the broker starts.
func TestBrokerZooKeeperSessionTimeoutFlag(t *testing.T) {
	testenv.Needs(t, testenv.Tributary, testenv.ZooKeeper)
	stderr := testenv.RunStderr(t, 1, "broker", "--id", "1", "--zookeeper", "127.0.0.1:1/t", "--zookeeper-session-timeout", "0s")
	if want := "--zookeeper-session-timeout 0s: must be positive"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want it to say %q", stderr, want)
	}

	connect := testenv.StartZooKeeper(t)
	addr := testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "broker", "--id", "1", "--zookeeper", connect, "--listen", addr,
		"--data-dir", t.TempDir(), "--zookeeper-session-timeout", "5s")
	testenv.WaitListening(t, p, addr, 60*time.Second)
	servers, _, err := cluster.ParseZKConnect(connect)
	if err != nil {
		t.Fatal(err)
	}
	var cons string
	testenv.Eventually(t, 10*time.Second, "ZooKeeper lists a session of 5 s", func() bool {
		c, err := net.DialTimeout("tcp", servers[0], 5*time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("cons")); err != nil {
			return false
		}
		out, _ := io.ReadAll(c)
		cons = string(out)
		return strings.Contains(cons, ",to=5000,")
	})
	if strings.Contains(cons, ",to=4000,") {
		t.Errorf("a session of the 4 s default besides the broker's:\n%s", cons)
	}
}
