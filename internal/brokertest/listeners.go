package brokertest

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// StartListeners starts a broker in this process serving one listener of
// each protocol given, on free loopback ports, and returns the address of
// each. configure may set TLS files, credentials and the like.
func StartListeners(t testing.TB, configure func(*broker.Config), protos ...broker.SecurityProtocol) (*broker.Broker, map[broker.SecurityProtocol]string) {
	t.Helper()
	return StartMember(t, func(c *broker.Config, _ []cluster.Endpoint) {
		if configure != nil {
			configure(c)
		}
	}, protos...)
}

// StartMember is StartListeners for a broker whose configuration needs
// its endpoints, as a cluster member registering itself does.
func StartMember(t testing.TB, configure func(*broker.Config, []cluster.Endpoint), protos ...broker.SecurityProtocol) (*broker.Broker, map[broker.SecurityProtocol]string) {
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

// SetUser stores a SCRAM credential in a standalone broker's data
// directory, as `tributary users set` does.
func SetUser(t testing.TB, dataDir, user, mechanism, password string) {
	t.Helper()
	if err := broker.OpenCredentialFile(broker.CredentialFilePath(dataDir)).Set(user, mechanism, password, broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
}

// ClientTLS is a client configuration trusting pool, presenting the
// certificate in certFile/keyFile when they are given.
func ClientTLS(t testing.TB, pool *x509.CertPool, certFile, keyFile string) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		return WithCertificate(t, cfg, certFile, keyFile)
	}
	return cfg
}

// WithCertificate is cfg presenting the certificate in certFile/keyFile.
func WithCertificate(t testing.TB, cfg *tls.Config, certFile, keyFile string) *tls.Config {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.Certificates = []tls.Certificate{pair}
	return cfg
}

// StartStandalone runs `tributary standalone` on dataDir and addr, without
// a schema registry and with a short flush interval, and waits until it
// listens.
func StartStandalone(t testing.TB, dataDir, addr string) *testenv.Process {
	t.Helper()
	p := testenv.StartProcess(t, "standalone", "--data-dir", dataDir, "--listen", addr, "--registry-listen=", "--flush-interval", "20ms")
	testenv.WaitListening(t, p, addr, 30*time.Second)
	return p
}
