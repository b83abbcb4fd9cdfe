package system_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	testenv.Needs(t, testenv.Tributary, testenv.Python)
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

// `tributary schema` speaks to the secured registry with the Confluent
// user info kept in a file: the writer registers, the reader lists but is
// refused a registration (403), a wrong password is unauthorized (401).
func TestSchemaCommandWithRegistryCredentials(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	url, pki, _ := secureRegistry(t)
	dir := t.TempDir()
	info := func(userPass string) string {
		p := filepath.Join(dir, strings.Split(userPass, ":")[0]+"-"+strings.Split(userPass, ":")[1])
		os.WriteFile(p, []byte(userPass+"\n"), 0o600)
		return p
	}
	schemaFile := filepath.Join("..", "..", "testdata", "schemas", "pageview.avsc")
	base := []string{"--registry", url, "--registry-tls-ca", pki.CAFile}
	schema := func(userPass string, args ...string) (string, string, int) {
		return runAll(t, "", append(append(args, base...), "--registry-user-info-file", info(userPass))...)
	}
	if out, stderr, code := schema("writer:writer-pw", "schema", "register", "--subject", "pageviews-value", "--file", schemaFile); code != 0 {
		t.Fatalf("schema register as writer: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code := schema("reader:reader-pw", "schema", "list"); code != 0 || !strings.Contains(out, "pageviews-value") {
		t.Fatalf("schema list as reader: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code := schema("reader:reader-pw", "schema", "register", "--subject", "clicks-value", "--file", schemaFile); code == 0 || !strings.Contains(stderr, "needs the writer role") {
		t.Fatalf("schema register as reader: exit %d, want the registry's refusal naming the role\n%s", code, stderr)
	}
	if _, stderr, code := schema("reader:wrong", "schema", "list"); code == 0 || !strings.Contains(stderr, "Unauthorized") {
		t.Fatalf("schema list with a wrong password: exit %d, want the registry's Unauthorized\n%s", code, stderr)
	}
}
