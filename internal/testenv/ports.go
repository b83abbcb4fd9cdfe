package testenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
)

// ephemeralRangeFile holds Linux's range of ports for outgoing connections
// ("32768\t60999" by default).
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// lowestTestPort keeps tests off the ports below it, where developers run
// their own services (ZooKeeper on 2181, Kafka on 9092, a registry on 8081).
const lowestTestPort = 10000

// freePort returns a loopback port that is free now, for a process that
// must be told its port before it binds (ZooKeeper, a tributary process).
// A port from listening on :0 comes from Linux's ephemeral range, where
// any process's next outgoing connection may take it between this check
// and the bind; so the port is picked outside that range, where only
// another explicit bind can take it (rare, and what ZooKeeper's start
// retries on).
func freePort() (int, error) {
	ln, err := listenFree()
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// listenFree listens on a loopback port outside the ephemeral range (see
// freePort). A broker started on it can be restarted on the same address:
// no outgoing connection takes the port while it is down.
func listenFree() (net.Listener, error) {
	lo, hi := portWindow(ephemeralRange())
	for range 200 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo)))
		if err == nil {
			return ln, nil
		}
	}
	return nil, fmt.Errorf("no free loopback port in %d-%d after 200 tries", lo, hi-1)
}

// ephemeralRange reads Linux's ephemeral port range; where it cannot, it
// assumes Linux's default.
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile(ephemeralRangeFile)
	if err != nil {
		return lo, hi
	}
	var l, h int
	if _, err := fmt.Sscan(string(b), &l, &h); err != nil || l > h {
		return lo, hi
	}
	return l, h
}

// portWindow returns the ports [lo, hi) tests pick from given the ephemeral
// range [ephLo, ephHi]: below it if at least a thousand ports fit between
// lowestTestPort and it, else above it; if it covers nearly everything,
// whatever is left from lowestTestPort up (the start retries cover the
// race there).
func portWindow(ephLo, ephHi int) (lo, hi int) {
	const enough = 1000
	switch {
	case ephLo-lowestTestPort >= enough:
		return lowestTestPort, ephLo
	case 65535-ephHi >= enough:
		return ephHi + 1, 65536
	default:
		return lowestTestPort, 65536
	}
}

// errPortTaken says another process bound the port picked for a service
// before the service did; the start is retried on another port.
var errPortTaken = errors.New("port taken by another process")

// FreePorts returns the first of n consecutive loopback ports that are free
// now and lie outside the ephemeral range (see freePort), for a process
// told several ports at once (Apache Kafka's listener and its
// controller's).
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	lo, hi := portWindow(ephemeralRange())
	for range 200 {
		base := lo + rand.IntN(hi-lo-n)
		if portsFree(base, n) {
			return base
		}
	}
	t.Fatalf("no %d consecutive free loopback ports in %d-%d after 200 tries", n, lo, hi-1)
	return 0
}

// portsFree reports whether ports base..base+n-1 can all be bound now.
func portsFree(base, n int) bool {
	for p := base; p < base+n; p++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}
