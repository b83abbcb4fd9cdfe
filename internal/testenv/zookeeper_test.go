package testenv

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/internal/zkprobe"
)

func TestStartZooKeeperGivesEachTestItsOwnChroot(t *testing.T) {
	var first string
	t.Run("first", func(t *testing.T) {
		first = StartZooKeeper(t)
		second := StartZooKeeper(t)
		if first == second {
			t.Fatalf("two calls returned the same chroot %q", first)
		}
		addr, chroot, ok := strings.Cut(first, "/")
		if !ok || !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Fatalf("connect string %q is not 127.0.0.1:PORT/chroot", first)
		}
		conn := zkDial(t, addr)
		defer conn.Close()
		if _, err := conn.Create("/"+chroot+"/node", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("creating a node under the test's chroot: %v", err)
		}
		if _, err := conn.Create("/"+chroot+"/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	})
	// The subtest's cleanup must have removed its chroot, ephemeral nodes of
	// a still-open session included.
	addr, chroot, _ := strings.Cut(first, "/")
	conn := zkDial(t, addr)
	defer conn.Close()
	ok, _, err := conn.Exists("/" + chroot)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatalf("chroot /%s still exists after its test ended", chroot)
	}
}

func TestZooKeeperAnswersRuok(t *testing.T) {
	addr := ZooKeeperAddr(t)
	Eventually(t, 5*time.Second, "ZooKeeper at "+addr+" answers ruok", func() bool { return zkprobe.Ruok(addr) })
	if got := chrootName("TestX/sub case#1"); got != "TestX_sub_case_1" {
		t.Fatalf("chrootName = %q", got)
	}
}
