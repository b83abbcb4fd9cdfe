package system_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// A `tributary schema-registry` serving HTTPS reads its certificate again
// on SIGHUP: new connections get the renewed certificate, a connection
// opened before keeps being served, and the process stays up.
func TestRegistryCertificateReloadOnSIGHUP(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	pki := testenv.NewPKI(t)
	brokerAddr, regAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	b := testenv.StartProcess(t, "standalone", "--data-dir", t.TempDir(), "--listen", brokerAddr, "--registry-listen=")
	testenv.WaitListening(t, b, brokerAddr, 60*time.Second)
	reg := testenv.StartProcess(t, "schema-registry", "--bootstrap", brokerAddr, "--listen", regAddr,
		"--registry-tls-cert", pki.CertFile, "--registry-tls-key", pki.KeyFile)
	testenv.WaitListening(t, reg, regAddr, 60*time.Second)

	clientTLS := &tls.Config{RootCAs: pki.Pool}
	serial := func(c *tls.Conn) int64 { return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64() }
	old, err := tls.Dial("tcp", regAddr, clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if s := serial(old); s != 2 {
		t.Fatalf("first certificate has serial %d, want 2", s)
	}
	oldReader := bufio.NewReader(old)
	get := func() {
		t.Helper()
		old.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := old.Write([]byte("GET /subjects HTTP/1.1\r\nHost: registry\r\n\r\n")); err != nil {
			t.Fatalf("request on the connection opened before SIGHUP: %v", err)
		}
		resp, err := http.ReadResponse(oldReader, nil)
		if err != nil {
			t.Fatalf("answer on the connection opened before SIGHUP: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /subjects: %s", resp.Status)
		}
	}
	get()

	pki.Issue(t, "server", "127.0.0.1", 9) // overwrites the files the registry reads
	reg.Cmd.Process.Signal(syscall.SIGHUP)
	testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
		c, err := tls.Dial("tcp", regAddr, clientTLS)
		if err != nil {
			t.Fatalf("HTTPS connection after SIGHUP: %v\n%s", err, reg.Output.String())
		}
		s := serial(c)
		c.Close()
		return s == 9, fmt.Sprintf("new connections still get certificate serial %d after SIGHUP\n%s", s, reg.Output.String())
	})
	get() // the connection opened before the reload is still served
}
