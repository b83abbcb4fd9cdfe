package system_test

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestSecureStandaloneProcess runs `tributary standalone` with a PLAINTEXT
// and a SASL_SSL listener and a user set with `tributary users set`: kgo
// logs in with SCRAM-SHA-512 over TLS; after the certificate files are
// replaced, SIGHUP makes new connections get the new certificate while a
// connection opened before keeps being served.
func TestSecureStandaloneProcess(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	pki := testenv.NewPKI(t)
	dataDir := t.TempDir()
	pwFile := filepath.Join(t.TempDir(), "password")
	os.WriteFile(pwFile, []byte("bob-secret\n"), 0o600)
	users := testenv.StartProcess(t, "users", "set", "--data-dir", dataDir, "--user", "bob",
		"--mechanism", "SCRAM-SHA-512", "--password-file", pwFile)
	<-users.Done()
	if code := users.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("tributary users set: exit %d\n%s", code, users.Output.String())
	}

	list := testenv.StartProcess(t, "users", "list", "--data-dir", dataDir)
	<-list.Done()
	if out := list.Output.String(); !strings.Contains(out, "bob\tSCRAM-SHA-512(iterations=4096)") {
		t.Fatalf("tributary users list printed %q, want bob with SCRAM-SHA-512", out)
	}

	plain, secure := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", dataDir, "--registry-listen=",
		"--listeners", "PLAINTEXT://"+plain+",SASL_SSL://"+secure,
		"--tls-cert", pki.CertFile, "--tls-key", pki.KeyFile)
	testenv.WaitListening(t, p, secure, 30*time.Second)

	brokertest.RoundTrip(t, secure, "secure-process", 10, kgo.DialTLSConfig(brokertest.ClientTLS(t, pki.Pool, "", "")),
		kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()))

	serial := func(c *tls.Conn) int64 { return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64() }
	old, err := tls.Dial("tcp", secure, brokertest.ClientTLS(t, pki.Pool, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if s := serial(old); s != 2 {
		t.Fatalf("first certificate has serial %d, want 2", s)
	}

	pki.Issue(t, "server", "127.0.0.1", 7) // overwrites the files the broker reads
	p.Cmd.Process.Signal(syscall.SIGHUP)
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		c, err := tls.Dial("tcp", secure, brokertest.ClientTLS(t, pki.Pool, "", ""))
		if err != nil {
			t.Fatalf("TLS connection after SIGHUP: %v", err)
		}
		s := serial(c)
		c.Close()
		return s == 7, fmt.Sprintf("new connections still get certificate serial %d after SIGHUP, want 7", s)
	})

	// The connection opened before the reload is still served.
	old.SetDeadline(time.Now().Add(10 * time.Second))
	api := kmsg.NewPtrApiVersionsRequest()
	api.SetVersion(0)
	if _, err := brokertest.RawRequest(old, 1, api); err != nil {
		t.Fatalf("connection opened before SIGHUP was dropped: %v", err)
	}
}
