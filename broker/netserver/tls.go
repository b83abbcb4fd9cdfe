package netserver

// TLS for the SSL and SASL_SSL listeners, with Go's crypto/tls: TLS 1.2 and
// newer only. The certificate is read through GetCertificate from a pair
// that Reload swaps, so a renewed certificate takes effect for new
// connections on SIGHUP while established ones keep theirs. With a client
// CA, clients must present a certificate it signed, and its subject's
// common name is the connection's principal (User:<CN>).

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// TLSFiles names the PEM files of the broker's TLS identity.
type TLSFiles struct {
	CertFile string // certificate chain, leaf first
	KeyFile  string // private key of the leaf
	// ClientCAFile, when set, requires every TLS client to present a
	// certificate signed by one of these CAs (mutual TLS).
	ClientCAFile string
}

// TLS is the broker's TLS identity, which Reload swaps.
type TLS struct {
	files TLSFiles
	cert  atomic.Pointer[tls.Certificate]
	pool  *x509.CertPool // client CAs; nil: no client certificates asked
}

// NewTLS reads the files of the broker's TLS identity.
func NewTLS(files TLSFiles) (*TLS, error) {
	if files.KeyFile == "" {
		return nil, errors.New("broker: --tls-cert needs --tls-key")
	}
	s := &TLS{files: files}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	if files.ClientCAFile != "" {
		pem, err := os.ReadFile(files.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("broker: client CA: %w", err)
		}
		s.pool = x509.NewCertPool()
		if !s.pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("broker: client CA %s holds no PEM certificate", files.ClientCAFile)
		}
	}
	return s, nil
}

// Reload reads the certificate pair again (on SIGHUP): new TLS connections
// get the new certificate, open ones keep theirs. On error the current
// pair stays.
func (s *TLS) Reload() error {
	cert, err := tls.LoadX509KeyPair(s.files.CertFile, s.files.KeyFile)
	if err != nil {
		return fmt.Errorf("broker: TLS certificate %s / key %s: %w", s.files.CertFile, s.files.KeyFile, err)
	}
	s.cert.Store(&cert)
	return nil
}

func (s *TLS) config() *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.cert.Load(), nil
		},
	}
	if s.pool != nil {
		cfg.ClientCAs = s.pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg
}

// Leaf is the certificate's leaf as parsed when loaded (nil if unparsed),
// and the file it came from, for the reload's log line.
func (s *TLS) Leaf() (*x509.Certificate, string) {
	return s.cert.Load().Leaf, s.files.CertFile
}

// tlsPrincipal is the principal of a handshaken TLS connection: User:<CN>
// of the verified client certificate, else User:ANONYMOUS.
func tlsPrincipal(cs tls.ConnectionState) string {
	if len(cs.VerifiedChains) > 0 && len(cs.VerifiedChains[0]) > 0 {
		return "User:" + cs.VerifiedChains[0][0].Subject.CommonName
	}
	return Anonymous
}

// Anonymous is the principal of a client that has not proved who it is.
const Anonymous = "User:ANONYMOUS"
