package broker

// TLS for the SSL and SASL_SSL listeners, with Go's crypto/tls: TLS 1.2 and
// newer only. The certificate is read through GetCertificate from a pair
// that ReloadTLS swaps, so a renewed certificate takes effect for new
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

type tlsState struct {
	files TLSFiles
	cert  atomic.Pointer[tls.Certificate]
	pool  *x509.CertPool // client CAs; nil: no client certificates asked
}

func newTLSState(files TLSFiles) (*tlsState, error) {
	if files.KeyFile == "" {
		return nil, errors.New("broker: --tls-cert needs --tls-key")
	}
	s := &tlsState{files: files}
	if err := s.reload(); err != nil {
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

// reload reads the certificate pair again; on error the current pair stays.
func (s *tlsState) reload() error {
	cert, err := tls.LoadX509KeyPair(s.files.CertFile, s.files.KeyFile)
	if err != nil {
		return fmt.Errorf("broker: TLS certificate %s / key %s: %w", s.files.CertFile, s.files.KeyFile, err)
	}
	s.cert.Store(&cert)
	return nil
}

func (s *tlsState) config() *tls.Config {
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

// ReloadTLS reads the certificate and key files again (on SIGHUP). New TLS
// connections get the new certificate; open ones are not dropped. A pair
// that does not load is reported and the current one kept.
func (b *Broker) ReloadTLS() error {
	if b.tls == nil {
		return nil
	}
	if err := b.tls.reload(); err != nil {
		b.logger.Error("TLS certificate reload failed; keeping the current certificate", "err", err)
		return err
	}
	leaf := b.tls.cert.Load().Leaf
	attrs := []any{"cert", b.tls.files.CertFile}
	if leaf != nil {
		attrs = append(attrs, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
	}
	b.logger.Info("TLS certificate reloaded", attrs...)
	return nil
}

// tlsPrincipal is the principal of a handshaken TLS connection: User:<CN>
// of the verified client certificate, else User:ANONYMOUS.
func tlsPrincipal(cs tls.ConnectionState) string {
	if len(cs.VerifiedChains) > 0 && len(cs.VerifiedChains[0]) > 0 {
		return "User:" + cs.VerifiedChains[0][0].Subject.CommonName
	}
	return anonymous
}

const anonymous = "User:ANONYMOUS"
