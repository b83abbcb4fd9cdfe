package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// secureRegistry runs `tributary standalone` whose registry serves HTTPS
// with basic auth: users writer (role writer), reader (reader) and admin
// (admin), each with the password "<name>-pw". It returns the registry's
// URL, the PKI and the broker's PLAINTEXT address.
func secureRegistry(t *testing.T) (url string, pki *testenv.PKI, brokerAddr string) {
	t.Helper()
	pki = testenv.NewPKI(t)
	dataDir := t.TempDir()
	creds := broker.OpenCredentialFile(broker.CredentialFilePath(dataDir))
	for _, u := range []string{"writer", "reader", "admin"} {
		if err := creds.Set(u, "SCRAM-SHA-512", u+"-pw", broker.DefaultSCRAMIterations); err != nil {
			t.Fatal(err)
		}
	}
	roles := filepath.Join(t.TempDir(), "roles")
	os.WriteFile(roles, []byte("# test roles\nwriter = writer\nreader = reader\nadmin = admin\n"), 0o600)
	brokerAddr, regAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", dataDir, "--listen", brokerAddr, "--registry-listen", regAddr,
		"--registry-tls-cert", pki.CertFile, "--registry-tls-key", pki.KeyFile,
		"--registry-auth", "basic", "--registry-roles", roles)
	testenv.WaitListening(t, p, regAddr, 60*time.Second)
	return "https://" + regAddr, pki, brokerAddr
}

// Confluent's Python client (confluent-kafka's SchemaRegistryClient, with
// basic.auth.user.info and ssl.ca.location) registers and fetches a schema
// over HTTPS; a reader may fetch but not register; no credentials, 401.
func TestRegistryHTTPSBasicAuthConfluentPython(t *testing.T) {
	if err := exec.Command("python3", "-c", "import confluent_kafka.schema_registry").Run(); err != nil {
		t.Fatalf("Python's confluent-kafka with its schema registry client is missing: python3 -m pip install 'confluent-kafka[schemaregistry]' (scripts/install-deps.sh does it)")
	}
	url, pki, _ := secureRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := filepath.Join("..", "..", "scripts", "kafka", "registry_basic_auth.py")
	cmd := exec.CommandContext(ctx, "python3", script, url, pki.CAFile)
	cmd.Env = append(os.Environ(), "WRITER_USER_INFO=writer:writer-pw", "READER_USER_INFO=reader:reader-pw")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	t.Logf("%s", out)
}
