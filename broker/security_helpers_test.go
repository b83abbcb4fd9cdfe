package broker_test

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"testing"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// testPKI is testenv's test CA, under the short names the broker tests
// use, with a client certificate for CN=alice (principal User:alice).
type testPKI struct {
	*testenv.PKI
	dir                   string
	caFile                string
	certFile, keyFile     string // server, for 127.0.0.1
	clientCert, clientKey string // CN=alice
	pool                  *x509.CertPool
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := testenv.NewPKI(t)
	alice, aliceKey := p.Issue(t, "alice", "", 3)
	return &testPKI{PKI: p, dir: p.Dir, caFile: p.CAFile, certFile: p.CertFile, keyFile: p.KeyFile,
		clientCert: alice, clientKey: aliceKey, pool: p.Pool}
}

func (p *testPKI) issue(t testing.TB, cn, ip string, serial int64) (certFile, keyFile string) {
	t.Helper()
	return p.Issue(t, cn, ip, serial)
}

// clientTLS is a client configuration trusting the test CA, presenting
// the client certificate when withCert is set.
func (p *testPKI) clientTLS(t testing.TB, withCert bool) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
	if withCert {
		c, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

// startListeners starts a broker in this process serving one listener of
// each protocol given, on free loopback ports, and returns the address of
// each. configure may set TLS files, credentials and the like.
func startListeners(t testing.TB, configure func(*broker.Config), protos ...broker.SecurityProtocol) (*broker.Broker, map[broker.SecurityProtocol]string) {
	t.Helper()
	return startMember(t, func(c *broker.Config, _ []cluster.Endpoint) {
		if configure != nil {
			configure(c)
		}
	}, protos...)
}

// startMember is startListeners for a broker whose configuration needs its
// endpoints, as a cluster member registering itself does.
func startMember(t testing.TB, configure func(*broker.Config, []cluster.Endpoint), protos ...broker.SecurityProtocol) (*broker.Broker, map[broker.SecurityProtocol]string) {
	t.Helper()
	ls := make([]broker.Listener, len(protos))
	lns := make([]net.Listener, len(protos))
	eps := make([]cluster.Endpoint, len(protos))
	addrs := map[broker.SecurityProtocol]string{}
	for i, p := range protos {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls[i], lns[i] = broker.Listener{Protocol: p, Addr: ln.Addr().String()}, ln
		eps[i] = broker.ListenerEndpoint(ls[i], ln)
		addrs[p] = ln.Addr().String()
	}
	cfg := broker.Config{
		DataDir:          t.TempDir(),
		AutoCreateTopics: true,
		Logger:           testenv.Logger(t, slog.LevelWarn),
	}
	configure(&cfg, eps)
	b, err := broker.New(cfg)
	if err != nil {
		for _, ln := range lns {
			ln.Close()
		}
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := b.ServeListeners(ls, lns); err != nil {
			t.Errorf("serving: %v", err)
		}
	}()
	t.Cleanup(func() {
		b.Close()
		<-done
	})
	return b, addrs
}

// setUser stores a SCRAM credential in a standalone broker's data
// directory, as `tributary users set` does.
func setUser(t testing.TB, dataDir, user, mechanism, password string) {
	t.Helper()
	if err := broker.OpenCredentialFile(broker.CredentialFilePath(dataDir)).Set(user, mechanism, password, broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
}
