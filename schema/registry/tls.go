package registry

// The registry's HTTPS certificate, read through GetCertificate from a pair
// that Reload swaps (on SIGHUP in `tributary schema-registry` and
// `standalone`, as the broker does): a renewed certificate takes effect for
// new connections without a restart, and open connections keep theirs.

import (
	"crypto/tls"
	"fmt"
	"sync/atomic"
)

// Certificate is a TLS certificate and key read from PEM files.
type Certificate struct {
	CertFile, KeyFile string

	cert atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads the pair once; Reload reads it again.
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{CertFile: certFile, KeyFile: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again. On error the current pair stays in use, so
// a half-written renewal never takes the registry's HTTPS down.
func (c *Certificate) Reload() error {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return fmt.Errorf("registry TLS certificate %s / key %s: %w", c.CertFile, c.KeyFile, err)
	}
	c.cert.Store(&cert)
	return nil
}

// Leaf is the certificate in use, for logging what a reload loaded.
func (c *Certificate) Leaf() *tls.Certificate { return c.cert.Load() }

// TLSConfig is a server configuration, TLS 1.2 and newer, that presents
// the pair loaded last to every new connection.
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cert.Load(), nil
		},
	}
}
