// Package clientsec turns how a Tributary client proves itself into client
// options: TLS and SASL settings into franz-go kgo options, schema
// registry credentials into pkg/sr options. Every command and every
// config file (job specs, the mirror, the loader) carries the same two
// structs, so a cluster secured once is reached the same way by all of
// them, and a command adds them in one line.
//
// What a caller may rely on:
//
//   - Passwords are read from files (first line), never taken from the
//     command line, where other users of the machine would see them.
//   - An empty Kafka adds no option: plaintext, as before.
//   - Any TLS setting turns TLS on; the server's certificate is always
//     verified (against TLSCA, or the system's roots).
//   - Mistakes (a mechanism we do not speak, a user without a password
//     file, a certificate without its key) are errors naming the flag or
//     key to fix, returned before any connection is made.
package clientsec

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/pkg/sr"
)

// Kafka is how a client reaches secured brokers: Kafka's
// security.protocol is SSL when TLS is set, SASL_PLAINTEXT when only a
// mechanism is, SASL_SSL when both are.
type Kafka struct {
	// TLS turns TLS on even without any of the files below (the brokers'
	// certificate is then checked against the system's roots).
	TLS bool `yaml:"tls" json:"tls,omitempty"`
	// TLSCA is a PEM file of the CAs that sign the brokers' certificates.
	TLSCA string `yaml:"tls_ca" json:"tls_ca,omitempty"`
	// TLSCert and TLSKey are a PEM client certificate and its key, for
	// brokers that ask for one (principal User:<CN>).
	TLSCert string `yaml:"tls_cert" json:"tls_cert,omitempty"`
	TLSKey  string `yaml:"tls_key" json:"tls_key,omitempty"`
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	SASLMechanism string `yaml:"sasl_mechanism" json:"sasl_mechanism,omitempty"`
	SASLUser      string `yaml:"sasl_user" json:"sasl_user,omitempty"`
	// SASLPasswordFile holds the password on its first line.
	SASLPasswordFile string `yaml:"sasl_password_file" json:"sasl_password_file,omitempty"`
}

// Register adds the flags of k to fs, each name after prefix ("" for a
// command with one cluster, "source-" and "target-" for the mirror).
func (k *Kafka) Register(fs *flag.FlagSet, prefix string) {
	fs.BoolVar(&k.TLS, prefix+"tls", false, "connect to the brokers with TLS (implied by the other --"+prefix+"tls-* flags)")
	fs.StringVar(&k.TLSCA, prefix+"tls-ca", "", "PEM `file` of the CAs that sign the brokers' certificates (default: the system's)")
	fs.StringVar(&k.TLSCert, prefix+"tls-cert", "", "PEM client certificate `file`, for brokers that require one")
	fs.StringVar(&k.TLSKey, prefix+"tls-key", "", "PEM private key `file` of --"+prefix+"tls-cert")
	fs.StringVar(&k.SASLMechanism, prefix+"sasl-mechanism", "", "SASL `mechanism`: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fs.StringVar(&k.SASLUser, prefix+"sasl-user", "", "SASL user `name`")
	fs.StringVar(&k.SASLPasswordFile, prefix+"sasl-password-file", "", "`file` holding the SASL password on its first line")
}

// Protocol is Kafka's security.protocol of k, which is also the name of
// the broker listener it can talk to: PLAINTEXT, SSL, SASL_PLAINTEXT or
// SASL_SSL. Clients that find brokers through ZooKeeper (the paper's
// consumer groups, the mirror's sources) pick that listener's addresses.
func (k Kafka) Protocol() string {
	switch {
	case k.usesTLS() && k.SASLMechanism != "":
		return "SASL_SSL"
	case k.usesTLS():
		return "SSL"
	case k.SASLMechanism != "":
		return "SASL_PLAINTEXT"
	}
	return "PLAINTEXT"
}

// usesTLS reports whether any setting asks for TLS.
func (k Kafka) usesTLS() bool { return k.TLS || k.TLSCA != "" || k.TLSCert != "" || k.TLSKey != "" }

// Opts returns the kgo options of k: none when k is empty.
func (k Kafka) Opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	cfg, err := k.TLSConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	mech, err := k.Mechanism()
	if err != nil {
		return nil, err
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, nil
}

// TLSConfig is the client TLS configuration of k, nil when k asks for no
// TLS: for a client that dials its own connections (the broker's replica
// fetchers) rather than through kgo.
func (k Kafka) TLSConfig() (*tls.Config, error) {
	if !k.usesTLS() {
		return nil, nil
	}
	return tlsConfig(k.TLSCA, k.TLSCert, k.TLSKey)
}

// Mechanism is the SASL mechanism of k with its credentials, nil when k
// has none.
func (k Kafka) Mechanism() (sasl.Mechanism, error) {
	if k.SASLMechanism == "" {
		if k.SASLUser != "" || k.SASLPasswordFile != "" {
			return nil, errors.New("sasl_user / sasl_password_file need sasl_mechanism (--sasl-mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		}
		return nil, nil
	}
	if k.SASLUser == "" || k.SASLPasswordFile == "" {
		return nil, fmt.Errorf("SASL %s needs sasl_user and sasl_password_file (--sasl-user, --sasl-password-file)", k.SASLMechanism)
	}
	pass, err := ReadSecret(k.SASLPasswordFile)
	if err != nil {
		return nil, fmt.Errorf("SASL password: %w", err)
	}
	switch strings.ToUpper(k.SASLMechanism) {
	case "PLAIN":
		return plain.Auth{User: k.SASLUser, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: k.SASLUser, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: k.SASLUser, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", k.SASLMechanism)
}

// Registry is how a client reaches a secured schema registry.
type Registry struct {
	// UserInfoFile holds, on its first line, `user:password`: Confluent's
	// basic.auth.user.info, kept in a file rather than on the command line.
	UserInfoFile string `yaml:"user_info_file" json:"user_info_file,omitempty"`
	// TLSCA is a PEM file of the CAs that sign the registry's HTTPS
	// certificate (default: the system's).
	TLSCA string `yaml:"tls_ca" json:"tls_ca,omitempty"`
}

// Register adds the flags of r to fs, named after prefix as Kafka.Register.
func (r *Registry) Register(fs *flag.FlagSet, prefix string) {
	fs.StringVar(&r.UserInfoFile, prefix+"registry-user-info-file", "", "`file` holding `user:password` on its first line for the schema registry's basic auth (Confluent's basic.auth.user.info)")
	fs.StringVar(&r.TLSCA, prefix+"registry-tls-ca", "", "PEM `file` of the CAs that sign the schema registry's HTTPS certificate (default: the system's)")
}

// Opts returns the pkg/sr options of r: none when r is empty.
func (r Registry) Opts() ([]sr.ClientOpt, error) {
	var opts []sr.ClientOpt
	if r.TLSCA != "" {
		cfg, err := tlsConfig(r.TLSCA, "", "")
		if err != nil {
			return nil, fmt.Errorf("registry: %w", err)
		}
		opts = append(opts, sr.DialTLSConfig(cfg))
	}
	if r.UserInfoFile != "" {
		info, err := ReadSecret(r.UserInfoFile)
		if err != nil {
			return nil, fmt.Errorf("registry user info: %w", err)
		}
		user, pass, ok := strings.Cut(info, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("registry user info %s: want `user:password` on the first line", r.UserInfoFile)
		}
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	return opts, nil
}

// ReadSecret returns the first line of path, without its line ending.
func ReadSecret(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("%s: the first line is empty", path)
	}
	return line, nil
}

// tlsConfig is a client TLS configuration: TLS 1.2 or newer, servers
// verified against caFile (or the system's roots), presenting certFile
// when set.
func tlsConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("TLS CA: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS CA %s holds no PEM certificate", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("a TLS client certificate needs both tls_cert and tls_key (--tls-cert, --tls-key)")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate %s / key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
