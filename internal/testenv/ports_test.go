package testenv

import (
	"fmt"
	"net"
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
