package broker_test

// Refused TLS handshakes: a client certificate the listener must not accept
// (signed by another CA, or expired) ends the connection in the handshake
// with the TLS alert a client expects, and the broker's log names the
// client's address and the reason, so an operator can tell who was turned
// away and why. A server certificate the client must not accept is refused
// by the client, naming the certificate.

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

func (p *testPKI) issueValid(t testing.TB, base, cn, ip string, serial int64, notBefore, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	return p.IssueValid(t, base, cn, ip, serial, notBefore, notAfter)
}

// localAddrs records the local address of every connection a client
// dials, which is the remote address the broker logs for it.
type localAddrs struct {
	mu    sync.Mutex
	addrs []string
}

func (l *localAddrs) add(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addrs = append(l.addrs, c.LocalAddr().String())
}

func (l *localAddrs) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.addrs...)
}

// dialer is a kgo dialer recording each connection's local address before
// it handshakes TLS with cfg (nil: plain TCP).
func (l *localAddrs) dialer(cfg *tls.Config) kgo.Opt {
	return kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		l.add(c)
		if cfg == nil {
			return c, nil
		}
		cfg = cfg.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(host)
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	})
}

// wantLogged waits for a log line holding all of subs, for one of the
// client's addresses ("remote=<addr>").
func wantLogged(t *testing.T, logs *logBuffer, clients *localAddrs, subs ...string) {
	t.Helper()
	found := func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			named := false
			for _, a := range clients.list() {
				named = named || strings.Contains(line, "remote="+a+" ")
			}
			all := named
			for _, s := range subs {
				all = all && strings.Contains(line, s)
			}
			if all {
				return true
			}
		}
		return false
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", logs.String())
		}
	})
	// The broker logs once it has read the client's alert or verdict, which
	// may come after the client has its error.
	testenv.Eventually(t, 10*time.Second, "the broker logging the refusal of "+strings.Join(clients.list(), ", ")+" with "+strings.Join(subs, ", "), found)
}

// pingErr is the error of a Ping from a client that does not retry.
func pingErr(t *testing.T, addr string, opts ...kgo.Opt) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := newClient(t, addr, append([]kgo.Opt{kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}, opts...)...)
	return cl.Ping(ctx)
}

// TestRefusedClientCertificates: on a listener requiring client
// certificates, one signed by another CA and one expired are refused in
// the handshake: franz-go gets the TLS alert naming the reason, and the
// broker logs the client's address and the verification error. A valid
// certificate is served on afterwards.
func TestRefusedClientCertificates(t *testing.T) {
	pki := newTestPKI(t)
	var logs logBuffer
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.TLS = broker.TLSFiles{CertFile: pki.certFile, KeyFile: pki.keyFile, ClientCAFile: pki.caFile}
		c.Logger = logs.logger()
	}, broker.SSL)
	addr := addrs[broker.SSL]

	other := newTestPKI(t)
	expiredCert, expiredKey := pki.issueValid(t, "expired-client", "alice", "", 20, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	for _, c := range []struct {
		name              string
		cert, key         string
		alert, brokerSays string
	}{
		{"signed by another CA", other.clientCert, other.clientKey, "unknown certificate authority", "certificate signed by unknown authority"},
		{"expired", expiredCert, expiredKey, "expired certificate", "certificate has expired"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var clients localAddrs
			err := pingErr(t, addr, clients.dialer(withCertificate(t, pki.clientTLS(t, false), c.cert, c.key)))
			if err == nil || !strings.Contains(err.Error(), c.alert) {
				t.Fatalf("client certificate %s: got %v, want the TLS alert %q", c.name, err, c.alert)
			}
			wantLogged(t, &logs, &clients, "TLS handshake failed", c.brokerSays)
		})
	}
	roundTrip(t, addr, "after-refusals", 5, kgo.DialTLSConfig(pki.clientTLS(t, true)))
}

// TestRefusedServerCertificates: a client trusting the test CA refuses a
// broker presenting an expired certificate of that CA, or one of another
// CA, with an error naming the certificate; the broker logs the client's
// alert with its address.
func TestRefusedServerCertificates(t *testing.T) {
	pki := newTestPKI(t)
	other := newTestPKI(t)
	expiredCert, expiredKey := pki.issueValid(t, "expired-server", "server", "127.0.0.1", 21, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	for _, c := range []struct {
		name       string
		cert, key  string
		clientSays string
	}{
		{"signed by another CA", other.certFile, other.keyFile, "certificate signed by unknown authority"},
		{"expired", expiredCert, expiredKey, "certificate has expired"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs logBuffer
			_, addrs := startListeners(t, func(cfg *broker.Config) {
				cfg.TLS = broker.TLSFiles{CertFile: c.cert, KeyFile: c.key}
				cfg.Logger = logs.logger()
			}, broker.SSL)
			var clients localAddrs
			err := pingErr(t, addrs[broker.SSL], clients.dialer(pki.clientTLS(t, false)))
			if err == nil || !strings.Contains(err.Error(), c.clientSays) {
				t.Fatalf("server certificate %s: got %v, want %q", c.name, err, c.clientSays)
			}
			// Go's client sends the alert bad_certificate for either.
			wantLogged(t, &logs, &clients, "TLS handshake failed", "remote error: tls: bad certificate")
		})
	}
}
