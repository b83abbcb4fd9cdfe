package main_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// startSASLStandalone starts a standalone process whose only listener is
// SASL_PLAINTEXT, with ACLs enforced and User:admin a super user, knowing
// admin and the other users given (each with the password "<user>-pw",
// SCRAM-SHA-256). as(user) is the client flags that log in as user.
func startSASLStandalone(t *testing.T, users ...string) (addr string, as func(user string) []string) {
	t.Helper()
	dataDir, dir := t.TempDir(), t.TempDir()
	creds := broker.OpenCredentialFile(broker.CredentialFilePath(dataDir))
	for _, u := range append([]string{"admin"}, users...) {
		if err := creds.Set(u, "SCRAM-SHA-256", u+"-pw", broker.DefaultSCRAMIterations); err != nil {
			t.Fatal(err)
		}
	}
	addr = testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", dataDir, "--registry-listen=",
		"--listeners", "SASL_PLAINTEXT://"+addr, "--authorizer", "--super-users", "User:admin")
	testenv.WaitListening(t, p, addr, 60*time.Second)
	return addr, func(user string) []string {
		pw := filepath.Join(dir, user+".pw")
		if err := os.WriteFile(pw, []byte(user+"-pw\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{"--brokers", addr, "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", user, "--sasl-password-file", pw}
	}
}
