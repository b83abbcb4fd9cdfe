package system_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// The registry of `tributary standalone --authorizer` works with no ACL at
// all: it reaches its broker in-process, as a principal that is a super
// user for the internal topics only. Clients outside still cannot write
// _schemas: not the anonymous PLAINTEXT client (even with the registry's
// client id), not a SASL user without an ACL.
func TestStandaloneRegistryUnderAuthorizer(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	dataDir := t.TempDir()
	creds := broker.OpenCredentialFile(broker.CredentialFilePath(dataDir))
	if err := creds.Set("bob", "SCRAM-SHA-512", "bob-pw", broker.DefaultSCRAMIterations); err != nil {
		t.Fatal(err)
	}
	plain, sasl, regAddr := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", dataDir, "--registry-listen", regAddr,
		"--listeners", "SASL_PLAINTEXT://"+sasl+",PLAINTEXT://"+plain, "--authorizer")
	testenv.WaitListening(t, p, regAddr, 60*time.Second)

	registry := "--registry=http://" + regAddr
	schemaFile := filepath.Join("..", "..", "testdata", "schemas", "pageview.avsc")
	if out := testenv.Run(t, "", 0, "schema", "register", registry, "--subject", "pageviews-value", "--file", schemaFile); !strings.Contains(out, "version 1 id 1") {
		t.Fatalf("register said %q", out)
	}
	if out := testenv.Run(t, "", 0, "schema", "get", registry, "--id", "1"); !strings.Contains(out, "PageView") {
		t.Fatalf("get --id 1 said %q", out)
	}

	for _, c := range []struct {
		who  string
		opts []kgo.Opt
	}{
		{"the anonymous client", []kgo.Opt{kgo.SeedBrokers(plain), kgo.ClientID(broker.RegistryClientID)}},
		{"bob", []kgo.Opt{kgo.SeedBrokers(sasl), kgo.SASL(scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha512Mechanism())}},
	} {
		cl, err := kgo.NewClient(append(c.opts, kgo.RequestRetries(1), kgo.DisableIdempotentWrite())...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: "_schemas", Key: []byte("forged"), Value: []byte("{}")}).FirstErr()
		cancel()
		cl.Close()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("%s writing _schemas: %v, want TOPIC_AUTHORIZATION_FAILED", c.who, err)
		}
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Output.String())
	}
}

// Credentials for the registry's own client name the listener it uses; a
// standalone without one refuses to start, saying what to change.
func TestStandaloneRegistryCredentialsNeedTheirListener(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := testenv.RunStderr(t, 1, "standalone", "--data-dir", t.TempDir(), "--listen", testenv.FreeAddr(t), "--registry-listen", testenv.FreeAddr(t),
		"--registry-kafka-sasl-mechanism", "SCRAM-SHA-512", "--registry-kafka-sasl-user", "registry", "--registry-kafka-sasl-password-file", pw)
	if !strings.Contains(stderr, "speak SASL_PLAINTEXT, and no listener does") {
		t.Fatalf("want the missing SASL_PLAINTEXT listener named, got\n%s", stderr)
	}
}
