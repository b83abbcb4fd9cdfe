package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a test CA with a server certificate for 127.0.0.1 and a client
// certificate, as PEM files in a test directory: what TLS listeners of a
// broker or a schema registry and their clients are given in tests.
type PKI struct {
	Dir                   string
	CAFile                string
	CertFile, KeyFile     string // server, for 127.0.0.1
	ClientCert, ClientKey string // CN=client
	Pool                  *x509.CertPool

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// NewPKI makes a CA and its two certificates, valid for a day.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	p := &PKI{Dir: t.TempDir()}
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
	p.CAFile = filepath.Join(p.Dir, "ca.pem")
	writePEM(t, p.CAFile, "CERTIFICATE", der)
	p.Pool = x509.NewCertPool()
	p.Pool.AddCert(p.ca)
	p.CertFile, p.KeyFile = p.Issue(t, "server", "127.0.0.1", 2)
	p.ClientCert, p.ClientKey = p.Issue(t, "client", "", 3)
	return p
}

// Issue writes a certificate for cn signed by the CA (a server
// certificate for ip when ip is set, else a client one), valid for a day,
// and its key, and returns their paths.
func (p *PKI) Issue(t testing.TB, cn, ip string, serial int64) (certFile, keyFile string) {
	t.Helper()
	return p.IssueValid(t, cn, cn, ip, serial, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

// IssueValid is Issue with the validity period given (an expired
// certificate for refusal tests), written under the file name base.
func (p *PKI) IssueValid(t testing.TB, base, cn, ip string, serial int64, notBefore, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
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
	certFile = filepath.Join(p.Dir, base+".pem")
	keyFile = filepath.Join(p.Dir, base+"-key.pem")
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
