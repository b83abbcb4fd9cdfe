package compat_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestKcatOverSASLSSL: Debian's kcat (librdkafka 2.0.2, whose SCRAM
// client-final nonce repeats the client nonce) logs in with SCRAM-SHA-512
// over TLS, produces and consumes.
func TestKcatOverSASLSSL(t *testing.T) {
	testenv.Needs(t, testenv.Kcat)
	if _, err := exec.LookPath(kcatPath); err != nil {
		t.Fatalf("kcat is missing: apt-get install -y kcat (.ci/run installs it)")
	}
	pki := testenv.NewPKI(t)
	dir := t.TempDir()
	brokertest.SetUser(t, dir, "kcat-user", "SCRAM-SHA-512", "kcat-secret")
	_, addrs := brokertest.StartListeners(t, func(c *broker.Config) {
		c.DataDir = dir
		c.TLS = broker.TLSFiles{CertFile: pki.CertFile, KeyFile: pki.KeyFile}
	}, broker.SASLSSL)
	cfg := filepath.Join(t.TempDir(), "kcat.conf")
	os.WriteFile(cfg, []byte(strings.Join([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanisms=SCRAM-SHA-512",
		"sasl.username=kcat-user",
		"sasl.password=kcat-secret",
		"ssl.ca.location=" + pki.CAFile,
	}, "\n")+"\n"), 0o600)
	kcat := func(stdin string, args ...string) string {
		t.Helper()
		return runKcat(t, 60*time.Second, stdin, append([]string{"-F", cfg, "-b", addrs[broker.SASLSSL]}, args...)...)
	}
	kcat("one\ntwo\nthree\n", "-P", "-t", "kcat-secure")
	got := kcat("", "-C", "-t", "kcat-secure", "-o", "beginning", "-c", "3", "-e")
	if got != "one\ntwo\nthree\n" {
		t.Fatalf("kcat consumed %q, want the three lines it produced", got)
	}
}
