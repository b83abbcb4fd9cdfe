package testenv

import (
	"net"
	"sync"
	"testing"
)

// HangingBroker listens on a free local port, accepts every connection and
// never answers: the broker that is up but stuck, which a client's
// shutdown must not wait for. It returns the address. The listener and
// every connection it accepted are closed when the test ends.
func HangingBroker(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
