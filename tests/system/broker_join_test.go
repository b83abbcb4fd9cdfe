package system_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A broker started beside a ZooKeeper that accepts connections but gives no
// session yet (one still starting) waits, saying why, and registers once
// ZooKeeper serves: it never runs on unregistered.
func TestClusterBrokerStartedBeforeZooKeeperServesRegisters(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	connect := testenv.StartZooKeeper(t)
	hostPort, chroot, _ := strings.Cut(connect, "/")
	link := newZKLink(t, hostPort)
	link.cut() // accepts and closes at once, as a booting ZooKeeper does
	viaLink := link.ln.Addr().String() + "/" + chroot
	addr, mon := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "broker", "--id", "3", "--zookeeper", viaLink,
		"--listen", addr, "--data-dir", t.TempDir(), "--metrics-listen", mon)
	testenv.Eventually(t, 30*time.Second, "the broker says why it waits", func() bool {
		out := p.Output.String()
		return strings.Contains(out, "still waiting for a ZooKeeper session") && strings.Contains(out, "authentication failed")
	})

	link.heal()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	observer, err := cluster.DialZooKeeper(ctx, connect, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	testenv.Eventually(t, 30*time.Second, "broker 3 in the registry", func() bool {
		ok, _, err := observer.Conn.Exists(observer.Paths.Broker(3))
		return ok && err == nil
	})
	testenv.Eventually(t, 30*time.Second, "/readyz answers 200", func() bool {
		code, _ := httpGet(t, "http://"+mon+"/readyz")
		return code == 200
	})
}
