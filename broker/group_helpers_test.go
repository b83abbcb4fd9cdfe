package broker_test

import (
	"context"
	"errors"
	"net"
	"sync"
)

// killSwitch is a dialer whose connections can all be cut at once, and
// which refuses new ones afterwards: to a broker, the client has crashed
// (no LeaveGroup, no more heartbeats).
type killSwitch struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (k *killSwitch) dial(ctx context.Context, network, host string) (net.Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed {
		return nil, errors.New("killed")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, host)
	if err == nil {
		k.conns = append(k.conns, c)
	}
	return c, err
}

func (k *killSwitch) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killed = true
	for _, c := range k.conns {
		c.Close()
	}
}
