package txnbackend

// The transaction coordinator's connections to other brokers (markers to
// partition leaders, produce verification to coordinators, offsets
// forwarded to coordinators): one kept per peer, over the inter-broker
// listener and logged in as this broker, so a transactional produce does
// not pay a TCP connection and a SASL login. Requests to one peer go one
// at a time; a failed one drops its connection and the next request
// dials again.

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/replication"
)

type peers struct {
	mu    sync.Mutex
	conns map[int32]*peer
	// renewals counts re-authentications (KIP-368) on these connections.
	renewals atomic.Int64
}

type peer struct {
	mu   sync.Mutex
	conn *replication.PeerConn // nil until dialled, and after a failure
}

// RoundTrip sends one request to broker id's inter-broker listener and
// reads its answer, within timeout.
func (tb *Backend) RoundTrip(id int32, req kmsg.Request, resp kmsg.Response, timeout time.Duration) error {
	ps := &tb.peers
	ps.mu.Lock()
	if ps.conns == nil {
		ps.conns = map[int32]*peer{}
	}
	p := ps.conns[id]
	if p == nil {
		p = &peer{}
		ps.conns[id] = p
	}
	ps.mu.Unlock()

	p.mu.Lock()
	defer p.mu.Unlock()
	for attempt := 0; ; attempt++ {
		kept := p.conn != nil
		if !kept {
			c, err := tb.dial(id)
			if err != nil {
				return err
			}
			p.conn = c
		}
		err := p.conn.Renew(&ps.renewals)
		if err == nil {
			err = p.conn.RoundTrip(req, resp, timeout)
		}
		if err == nil {
			return nil
		}
		p.conn.Close()
		p.conn = nil
		if !kept || attempt > 0 {
			return err
		}
		// A kept connection may have died with its peer's restart: once
		// more on a new one.
	}
}

// dial connects to broker id's inter-broker listener and logs in.
func (tb *Backend) dial(id int32) (*replication.PeerConn, error) {
	listener := tb.cfg.Listener
	for _, br := range tb.cfg.Meta.Brokers() {
		if br.ID != id {
			continue
		}
		host, port, ok := br.Endpoint(string(listener))
		if !ok {
			return nil, fmt.Errorf("broker %d has no %s listener (--inter-broker-listener)", id, listener)
		}
		nc, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))), 5*time.Second)
		if err != nil {
			return nil, err
		}
		c, err := replication.OpenPeerConn(nc, host, listener, tb.cfg.InterBroker, tb.cfg.Self)
		if err != nil {
			nc.Close()
			return nil, err
		}
		return c, nil
	}
	return nil, fmt.Errorf("broker %d is not alive", id)
}

// close closes the kept connections (Backend.Close).
func (ps *peers) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.conns {
		p.mu.Lock()
		if p.conn != nil {
			p.conn.Close()
			p.conn = nil
		}
		p.mu.Unlock()
	}
}
