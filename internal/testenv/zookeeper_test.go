package testenv

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/internal/zkprobe"
)

func TestStartZooKeeperGivesEachTestItsOwnChroot(t *testing.T) {
	Needs(t, ZooKeeper)
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
	Needs(t, ZooKeeper)
	addr := ZooKeeperAddr(t)
	Eventually(t, 5*time.Second, "ZooKeeper at "+addr+" answers ruok", func() bool { return zkprobe.Ruok(addr) })
	if got := chrootName("TestX/sub case#1"); got != "TestX_sub_case_1" {
		t.Fatalf("chrootName = %q", got)
	}
}

// TestZooKeeperStartRetriesWhenThePortIsTaken: another process binds the
// port picked for ZooKeeper first, and the start retries on another port.
// The occupant is either another ZooKeeper (another test binary's, which
// answers ruok there too and goes away when that binary ends: the flake
// "ZooKeeper at 127.0.0.1:42657 gave no session within 30s") or a listener
// that never answers (ZooKeeper's log says "Address already in use").
func TestZooKeeperStartRetriesWhenThePortIsTaken(t *testing.T) {
	Needs(t, ZooKeeper)
	for _, occupant := range []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"another ZooKeeper", func(t *testing.T) string { return ZooKeeperAddr(t) }},
		{"a silent listener", func(t *testing.T) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			return ln.Addr().String()
		}},
	} {
		t.Run(occupant.name, func(t *testing.T) {
			taken := occupant.addr(t)
			_, p, _ := net.SplitHostPort(taken)
			takenPort, _ := strconv.Atoi(p)
			var picked []int
			pick := func() (int, error) {
				if len(picked) == 0 {
					picked = append(picked, takenPort)
					return takenPort, nil
				}
				port, err := freePort()
				picked = append(picked, port)
				return port, err
			}
			s, err := startZooKeeperOn(pick)
			if err != nil {
				t.Fatalf("starting ZooKeeper with its first port taken: %v", err)
			}
			defer s.stdin.Close()
			if len(picked) != 2 || s.addr != fmt.Sprintf("127.0.0.1:%d", picked[1]) {
				t.Fatalf("picked ports %v, server at %s; want a second port after %d", picked, s.addr, takenPort)
			}
			mine, other := zkDataDir(s.addr), zkDataDir(taken)
			if mine == "" || mine == other {
				t.Fatalf("the server at %s keeps its data in %q, the one at %s in %q: want its own", s.addr, mine, taken, other)
			}
			zkDial(t, s.addr).Close()
		})
	}
}

// TestZooKeeperStartGivesUpOnOtherErrors: a failure that another port
// cannot cure (ZooKeeper refusing its configuration, here a port it cannot
// use) is reported at once, with ZooKeeper's log, not retried.
func TestZooKeeperStartGivesUpOnOtherErrors(t *testing.T) {
	Needs(t, ZooKeeper)
	tries := 0
	_, err := startZooKeeperOn(func() (int, error) { tries++; return 70000, nil })
	if err == nil || tries != 1 || errors.Is(err, errPortTaken) {
		t.Fatalf("after %d tries: %v; want one try and an error that is not errPortTaken", tries, err)
	}
}
