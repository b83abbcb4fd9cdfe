package testenv

import (
	"fmt"
	"net"
	"strconv"
	"testing"
)

func TestPortWindowLiesOutsideTheEphemeralRange(t *testing.T) {
	for _, c := range []struct {
		ephLo, ephHi, lo, hi int
	}{
		{32768, 60999, 10000, 32768}, // Linux's default: below it
		{49152, 65535, 10000, 49152}, // the IANA range
		{10500, 60999, 61000, 65536}, // too little room below: above it
		{1024, 65535, 10000, 65536},  // no room outside: whatever is left
	} {
		lo, hi := portWindow(c.ephLo, c.ephHi)
		if lo != c.lo || hi != c.hi {
			t.Errorf("ephemeral %d-%d: window [%d, %d), want [%d, %d)", c.ephLo, c.ephHi, lo, hi, c.lo, c.hi)
		}
	}
}

// TestFreePortIsFreeAndNotEphemeral: the ports tests hand to processes lie
// outside this machine's ephemeral range, where no outgoing connection can
// take them before the process binds, and can be bound.
func TestFreePortIsFreeAndNotEphemeral(t *testing.T) {
	ephLo, ephHi := ephemeralRange()
	for range 50 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if ephLo-lowestTestPort >= 1000 && (p < lowestTestPort || p >= ephLo) {
			t.Fatalf("port %d is not in [%d, %d), below the ephemeral range %d-%d", p, lowestTestPort, ephLo, ephLo, ephHi)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("binding port %d freePort returned: %v", p, err)
		}
		ln.Close()
	}
	addr := FreeAddr(t)
	if _, port, _ := net.SplitHostPort(addr); port == "" || port == "0" {
		t.Fatalf("FreeAddr = %q", addr)
	}
}

// TestStartBrokerListensOutsideTheEphemeralRange: a broker's port is one
// no outgoing connection can take while the broker is down, so a test can
// restart it on the same address, even at once (StartBroker returns once
// the broker serves, so Stop frees the port).
func TestStartBrokerListensOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := portWindow(ephemeralRange())
	b := StartBroker(t)
	_, p, _ := net.SplitHostPort(b.Addr)
	port, _ := strconv.Atoi(p)
	if port < lo || port >= hi {
		t.Fatalf("broker on %s: port not in [%d, %d)", b.Addr, lo, hi)
	}
	b.Stop()
	again := StartBroker(t, WithAddr(b.Addr), WithDataDir(b.DataDir))
	if again.Addr != b.Addr {
		t.Fatalf("restarted broker on %s, want %s", again.Addr, b.Addr)
	}
}

func TestFreePortsAreConsecutiveFreeAndNotEphemeral(t *testing.T) {
	base := FreePorts(t, 3)
	lo, hi := portWindow(ephemeralRange())
	if base < lo || base+2 >= hi {
		t.Fatalf("ports %d-%d leave the test window %d-%d", base, base+2, lo, hi-1)
	}
	for p := base; p < base+3; p++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d of %d-%d is not free: %v", p, base, base+2, err)
		}
		ln.Close()
	}
}
