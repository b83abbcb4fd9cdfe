package broker_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, as PEM files in a test directory.
type testPKI struct {
	dir                   string
	caFile                string
	certFile, keyFile     string // server
	clientCert, clientKey string // CN=alice
	pool                  *x509.CertPool

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "Tributary test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caKey = key
	p.caFile = filepath.Join(p.dir, "ca.pem")
	writePEM(t, p.caFile, "CERTIFICATE", der)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	p.certFile, p.keyFile = p.issue(t, "server", "127.0.0.1", 2)
	p.clientCert, p.clientKey = p.issue(t, "alice", "", 3)
	return p
}

// issue writes a certificate for cn (a server certificate for ip when ip
// is set, else a client one) and its key, and returns their paths.
func (p *testPKI) issue(t testing.TB, cn, ip string, serial int64) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if ip != "" {
		tmpl.IPAddresses = []net.IP{net.ParseIP(ip)}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	certFile = filepath.Join(p.dir, cn+".pem")
	keyFile = filepath.Join(p.dir, cn+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
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
