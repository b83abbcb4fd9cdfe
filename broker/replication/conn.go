package replication

// The connection of a replica fetcher to its leader: to the leader's
// inter-broker listener (Config.InterBrokerListener), over TLS when that
// listener is SSL or SASL_SSL, logged in with SASL when it is
// SASL_PLAINTEXT or SASL_SSL, with this broker's own credentials
// (Config.InterBroker). With the authorizer on, the leader serves a
// replica's fetch only to a principal with ClusterAction on the cluster.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/internal/clientsec"
)

const replicaHandshakeTimeout = 10 * time.Second

// dial connects to the leader's inter-broker listener and logs in.
func (f *fetcher) dial() (*PeerConn, error) {
	e := f.rs.env
	listener := e.listener
	for _, br := range e.meta.Brokers() {
		if br.ID != f.leader {
			continue
		}
		host, port, ok := br.Endpoint(string(listener))
		if !ok {
			return nil, fmt.Errorf("leader %d has no %s listener to replicate from (--inter-broker-listener)", f.leader, listener)
		}
		nc, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))), 5*time.Second)
		if err != nil {
			return nil, err
		}
		f.rs.dials.Add(1)
		f.mu.Lock()
		f.conn = nc
		f.mu.Unlock()
		if f.stopped() {
			nc.Close()
			return nil, net.ErrClosed
		}
		c, err := OpenPeerConn(nc, host, listener, e.sec, e.selfID)
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("leader %d, listener %s: %w", f.leader, listener, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("leader %d is not in the broker registry", f.leader)
}

// OpenPeerConn secures nc, a connection to another broker's listener, as
// listener requires, and logs in with sec as broker self. The replica
// fetchers and the transaction coordinator's peers use it.
func OpenPeerConn(nc net.Conn, host string, listener netserver.SecurityProtocol, sec clientsec.Kafka, self int32) (*PeerConn, error) {
	if listener.TLS() {
		cfg, err := sec.TLSConfig()
		if err != nil {
			return nil, fmt.Errorf("inter-broker TLS: %w", err)
		}
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		tc.SetDeadline(time.Now().Add(replicaHandshakeTimeout))
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		tc.SetDeadline(time.Time{})
		nc = tc
	}
	c := newReplicaConn(nc, self)
	if !listener.SASL() {
		return c, nil
	}
	mech, err := sec.Mechanism()
	if err != nil {
		return nil, fmt.Errorf("inter-broker SASL: %w", err)
	}
	if mech == nil {
		return nil, fmt.Errorf("the %s listener needs SASL credentials (--inter-broker-sasl-mechanism, --inter-broker-sasl-user, --inter-broker-sasl-password-file)", listener)
	}
	if err := c.login(mech, host); err != nil {
		return nil, err
	}
	return c, nil
}

// login runs SaslHandshake and the SaslAuthenticate exchanges of mech,
// and notes when to run them again if the leader limits the session.
func (c *PeerConn) login(mech sasl.Mechanism, host string) error {
	c.mech, c.host = mech, host
	start := time.Now()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech.Name()
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	hsr.Version = hs.Version
	if err := c.RoundTrip(hs, hsr, replicaHandshakeTimeout); err != nil {
		return err
	}
	if hsr.ErrorCode != 0 {
		return fmt.Errorf("SASL mechanism %s refused (the leader offers %v): %w", mech.Name(), hsr.SupportedMechanisms, kerr.ErrorForCode(hsr.ErrorCode))
	}
	ctx, cancel := context.WithTimeout(context.Background(), replicaHandshakeTimeout)
	defer cancel()
	session, msg, err := mech.Authenticate(ctx, host)
	if err != nil {
		return fmt.Errorf("SASL %s: %w", mech.Name(), err)
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, msg
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = req.Version
		if err := c.RoundTrip(req, resp, replicaHandshakeTimeout); err != nil {
			return err
		}
		if resp.ErrorCode != 0 {
			detail := ""
			if resp.ErrorMessage != nil {
				detail = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("SASL %s login refused%s: %w", mech.Name(), detail, kerr.ErrorForCode(resp.ErrorCode))
		}
		done, next, err := session.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", mech.Name(), err)
		}
		if done {
			c.renewAt = renewTime(start, resp.SessionLifetimeMillis)
			return nil
		}
		msg = next
	}
}

// renewTime is when a login made at start whose session lasts lifetimeMs
// (SaslAuthenticate's session_lifetime_ms; 0: for ever) is to be run
// again: early enough that a fetch waiting at the leader for data still
// reaches it inside the session, since the leader closes a connection
// whose request arrives after it.
func renewTime(start time.Time, lifetimeMs int64) time.Time {
	if lifetimeMs <= 0 {
		return time.Time{}
	}
	life := time.Duration(lifetimeMs) * time.Millisecond
	margin := max(life*15/100, replicaFetchWait+time.Second)
	return start.Add(max(life-margin, 0))
}

// Renew logs in again on the connection, between fetch rounds, once its
// session nears its end (KIP-368): a follower keeps its connection, and
// the leader checks its credentials again, as it does any client's.
func (c *PeerConn) Renew(renewals *atomic.Int64) error {
	if c.renewAt.IsZero() || time.Now().Before(c.renewAt) {
		return nil
	}
	if err := c.login(c.mech, c.host); err != nil {
		return fmt.Errorf("re-authenticating with the leader: %w", err)
	}
	renewals.Add(1)
	return nil
}

// PeerConn is a Kafka client connection to another broker (a fetcher's,
// a transaction peer's): requests one at a time, framed by kmsg.
type PeerConn struct {
	nc   net.Conn
	r    *bufio.Reader
	fmt  *kmsg.RequestFormatter
	corr int32
	buf  []byte
	// The login to repeat, and when (zero: never); see renew.
	mech    sasl.Mechanism
	host    string
	renewAt time.Time
}

func newReplicaConn(nc net.Conn, self int32) *PeerConn {
	return &PeerConn{
		nc:  nc,
		r:   bufio.NewReaderSize(nc, 64<<10),
		fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("tributary-replica-" + strconv.Itoa(int(self)))),
	}
}

func (c *PeerConn) Close() error { return c.nc.Close() }

// RoundTrip sends req and decodes the answer into resp, at req's version
// (a flexible version's response header carries tagged fields, skipped).
func (c *PeerConn) RoundTrip(req kmsg.Request, resp kmsg.Response, timeout time.Duration) error {
	c.corr++
	c.buf = c.fmt.AppendRequest(c.buf[:0], req, c.corr)
	c.nc.SetDeadline(time.Now().Add(timeout))
	if _, err := c.nc.Write(c.buf); err != nil {
		return err
	}
	var head [8]byte
	if _, err := io.ReadFull(c.r, head[:]); err != nil {
		return err
	}
	size := int32(binary.BigEndian.Uint32(head[:4]))
	if corr := int32(binary.BigEndian.Uint32(head[4:])); corr != c.corr {
		return fmt.Errorf("answer to request %d came for request %d", c.corr, corr)
	}
	if size < 4 || size > replicaFetchMaxBytes+1<<20 {
		return fmt.Errorf("answer of %d bytes", size)
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return err
	}
	resp.SetVersion(req.GetVersion())
	if req.IsFlexible() {
		if len(body) == 0 || body[0] != 0 {
			return fmt.Errorf("answer to request %d: unexpected tagged fields in the response header", c.corr)
		}
		body = body[1:]
	}
	return resp.ReadFrom(body)
}
