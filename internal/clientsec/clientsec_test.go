package clientsec_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/clientsec"
	"github.com/tributary-io/tributary/internal/testenv"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Mistakes are refused before any connection, naming what to fix.
func TestKafkaOptsErrors(t *testing.T) {
	pw := writeFile(t, "pw", "secret\n")
	empty := writeFile(t, "empty", "\n")
	for _, c := range []struct {
		name string
		k    clientsec.Kafka
		want string
	}{
		{"user without mechanism", clientsec.Kafka{SASLUser: "a", SASLPasswordFile: pw}, "sasl_mechanism"},
		{"mechanism without user", clientsec.Kafka{SASLMechanism: "PLAIN", SASLPasswordFile: pw}, "sasl_user"},
		{"mechanism without password", clientsec.Kafka{SASLMechanism: "PLAIN", SASLUser: "a"}, "sasl_password_file"},
		{"unknown mechanism", clientsec.Kafka{SASLMechanism: "GSSAPI", SASLUser: "a", SASLPasswordFile: pw}, "GSSAPI"},
		{"missing password file", clientsec.Kafka{SASLMechanism: "PLAIN", SASLUser: "a", SASLPasswordFile: pw + ".gone"}, "no such file"},
		{"empty password", clientsec.Kafka{SASLMechanism: "PLAIN", SASLUser: "a", SASLPasswordFile: empty}, "first line is empty"},
		{"certificate without key", clientsec.Kafka{TLSCert: pw}, "tls_key"},
		{"CA that is no PEM", clientsec.Kafka{TLSCA: pw}, "no PEM certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.k.Opts()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error naming %q", err, c.want)
			}
		})
	}
	if opts, err := (clientsec.Kafka{}).Opts(); err != nil || len(opts) != 0 {
		t.Fatalf("empty settings: %d options, %v; want none", len(opts), err)
	}
}

func TestRegistryOpts(t *testing.T) {
	if _, err := (clientsec.Registry{UserInfoFile: writeFile(t, "info", "no-colon\n")}).Opts(); err == nil || !strings.Contains(err.Error(), "user:password") {
		t.Fatalf("user info without a colon: %v, want an error asking for user:password", err)
	}
	opts, err := clientsec.Registry{UserInfoFile: writeFile(t, "info", "ci:pa:ss\r\n")}.Opts()
	if err != nil || len(opts) != 1 {
		t.Fatalf("user info: %d options, %v", len(opts), err)
	}
}

// Flags come with a prefix per cluster, as the mirror needs.
func TestRegisterPrefix(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var src, tgt clientsec.Kafka
	var reg clientsec.Registry
	src.Register(fs, "source-")
	tgt.Register(fs, "target-")
	reg.Register(fs, "target-")
	if err := fs.Parse([]string{"--source-sasl-user", "a", "--target-tls-ca", "ca.pem", "--target-registry-user-info-file", "u"}); err != nil {
		t.Fatal(err)
	}
	if src.SASLUser != "a" || tgt.TLSCA != "ca.pem" || tgt.SASLUser != "" || reg.UserInfoFile != "u" {
		t.Fatalf("source %+v target %+v registry %+v", src, tgt, reg)
	}
}

// Each mechanism logs in to a broker's SASL_SSL listener; a wrong
// password does not.
func TestLogin(t *testing.T) {
	pki := testenv.NewPKI(t)
	dataDir := t.TempDir()
	creds := broker.OpenCredentialFile(broker.CredentialFilePath(dataDir))
	for _, m := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		if err := creds.Set("alice", m, "alice-pw", broker.DefaultSCRAMIterations); err != nil {
			t.Fatal(err)
		}
	}
	addr := testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", dataDir, "--registry-listen=",
		"--listeners", "SASL_SSL://"+addr, "--tls-cert", pki.CertFile, "--tls-key", pki.KeyFile)
	testenv.WaitListening(t, p, addr, 60*time.Second)
	pw, wrong := writeFile(t, "pw", "alice-pw\n"), writeFile(t, "wrong", "nope\n")
	for _, c := range []struct {
		mech, pwFile string
		ok           bool
	}{
		{"PLAIN", pw, true}, {"SCRAM-SHA-256", pw, true}, {"scram-sha-512", pw, true}, {"SCRAM-SHA-512", wrong, false},
	} {
		t.Run(c.mech+"/"+filepath.Base(c.pwFile), func(t *testing.T) {
			opts, err := clientsec.Kafka{TLSCA: pki.CAFile, SASLMechanism: c.mech, SASLUser: "alice", SASLPasswordFile: c.pwFile}.Opts()
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(addr), kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelNone, nil)))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			err = cl.Ping(ctx)
			if c.ok && err != nil {
				t.Fatalf("login: %v", err)
			}
			if !c.ok && err == nil {
				t.Fatal("a wrong password logged in")
			}
		})
	}
}
