package broker_test

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/tributary-io/tributary/internal/brokertest"
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
	if withCert {
		return brokertest.ClientTLS(t, p.pool, p.clientCert, p.clientKey)
	}
	return brokertest.ClientTLS(t, p.pool, "", "")
}
