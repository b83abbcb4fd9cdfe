package compat_test

// Apache Kafka 4.4's Java client against Tributary's secured listeners, the
// way an operator runs it: kafka-console-producer, kafka-console-consumer
// and kafka-acls with --command-config naming a client properties file.
// The certificates are PEM files (ssl.keystore.type=PEM,
// ssl.truststore.type=PEM), so no keystore conversion is involved.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// javaClientConfig writes a Java client properties file of the given
// lines and returns its path.
func javaClientConfig(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// javaSCRAMConfig is the client configuration of user over SASL_SSL with
// SCRAM-SHA-256, trusting the test CA.
func javaSCRAMConfig(t *testing.T, pki *testenv.PKI, user, password string) string {
	t.Helper()
	return javaClientConfig(t,
		"security.protocol=SASL_SSL",
		"sasl.mechanism=SCRAM-SHA-256",
		fmt.Sprintf(`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, password),
		"ssl.truststore.type=PEM",
		"ssl.truststore.location="+pki.CAFile,
	)
}

// javaMutualTLSConfig is the client configuration of an SSL client
// presenting certFile/keyFile, given inline as PEM (Kafka reads a PEM key
// from a keystore file only when it is encrypted).
func javaMutualTLSConfig(t *testing.T, pki *testenv.PKI, certFile, keyFile string) string {
	t.Helper()
	inline := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// A properties file turns the escape \n back into a newline.
		return strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", `\n`)
	}
	return javaClientConfig(t,
		"security.protocol=SSL",
		"ssl.keystore.type=PEM",
		"ssl.keystore.certificate.chain="+inline(certFile),
		"ssl.keystore.key="+inline(keyFile),
		"ssl.truststore.type=PEM",
		"ssl.truststore.certificates="+inline(pki.CAFile),
	)
}

// consoleRoundTrip is a kafka-console-producer run writing lines to topic
// and a kafka-console-consumer run reading them back, both configured by
// the properties file config.
func consoleRoundTrip(addr, config, topic string, lines []string) []testenv.KafkaToolRun {
	common := []string{"--bootstrap-server", addr, "--command-config", config, "--topic", topic}
	return []testenv.KafkaToolRun{
		{Class: testenv.KafkaConsoleProducer, Args: common, Stdin: strings.Join(lines, "\n") + "\n"},
		{Class: testenv.KafkaConsoleConsumer, Args: append(slices.Clone(common), "--group", topic+"-readers",
			"--from-beginning", "--max-messages", fmt.Sprint(len(lines)), "--timeout-ms", "30000")},
	}
}

// TestJavaConsoleClientsOverSASLSSLAndMutualTLS: Kafka 4.4's console
// producer and consumer, configured by --command-config, write lines and
// read them back in order over SASL_SSL with SCRAM-SHA-256, and over an
// SSL listener that requires a client certificate. There the authorizer is
// on and only User:alice may write and read the topic, so the Java client
// is served as the principal its certificate names.
func TestJavaConsoleClientsOverSASLSSLAndMutualTLS(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	pki := testenv.NewPKI(t)
	aliceCert, aliceKey := pki.Issue(t, "alice", "", 3) // principal User:alice
	dir := t.TempDir()
	brokertest.SetUser(t, dir, "alice", "SCRAM-SHA-256", "alice-secret")
	_, saslAddrs := brokertest.StartListeners(t, func(c *broker.Config) {
		c.DataDir = dir
		c.TLS = broker.TLSFiles{CertFile: pki.CertFile, KeyFile: pki.KeyFile}
	}, broker.SASLSSL)
	_, mtlsAddrs := brokertest.StartListeners(t, func(c *broker.Config) {
		c.DataDir = t.TempDir()
		c.TLS = broker.TLSFiles{CertFile: pki.CertFile, KeyFile: pki.KeyFile, ClientCAFile: pki.CAFile}
		c.Authorizer = true
		c.SuperUsers = []string{"User:root"}
	}, broker.SSL)
	rootCert, rootKey := pki.Issue(t, "root", "", 10)
	rootTLS := brokertest.ClientTLS(t, pki.Pool, rootCert, rootKey)
	root := kadm.NewClient(brokertest.NewClient(t, mtlsAddrs[broker.SSL], kgo.DialTLSConfig(rootTLS)))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := root.CreateTopics(ctx, 1, 1, nil, "java-mtls"); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("java-mtls").Operations(kadm.OpWrite, kadm.OpRead),
		kadm.NewACLs().Groups("java-mtls-readers").Operations(kadm.OpRead),
	} {
		res, err := root.CreateACLs(ctx, b.Allow("User:alice").AllowHosts("*"))
		if err != nil || res[0].Err != nil {
			t.Fatalf("creating alice's ACLs: %v %v", err, res)
		}
	}

	const n = 50
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of the Java console producer", i)
	}
	runs := append(
		consoleRoundTrip(saslAddrs[broker.SASLSSL], javaSCRAMConfig(t, pki, "alice", "alice-secret"), "java-sasl-ssl", lines),
		consoleRoundTrip(mtlsAddrs[broker.SSL], javaMutualTLSConfig(t, pki, aliceCert, aliceKey), "java-mtls", lines)...)
	results := testenv.RunKafkaTools(t, runs...)
	for i, r := range results {
		// The console tools report a failed send or poll only in their
		// log, and exit 0.
		if r.Exit != 0 || strings.Contains(r.Stderr, "ERROR ") {
			t.Errorf("run %d: %v", i, r)
		}
	}
	want := strings.Join(lines, "\n") + "\n"
	for _, i := range []int{1, 3} {
		if got := results[i].Stdout; got != want {
			t.Errorf("the console consumer read back\n%s\nwant the %d lines produced\n%v", got, n, results[i])
		}
	}
	if t.Failed() {
		return
	}

	// The mTLS records are in the topic, as franz-go reads them too.
	cons := brokertest.NewClient(t, mtlsAddrs[broker.SSL], kgo.DialTLSConfig(rootTLS),
		kgo.ConsumeTopics("java-mtls"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for seen := 0; seen < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("reading java-mtls with franz-go: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != lines[seen] {
				t.Fatalf("record %d is %q, want %q", seen, r.Value, lines[seen])
			}
			seen++
		})
	}
}

// TestJavaKafkaAclsCommand: kafka-acls, run by a super user over SASL_SSL,
// adds a literal and a prefixed allow ACL for alice, lists them, and
// removes them; after each step DescribeACLs shows the ACLs the tool left
// and alice's writes succeed or fail accordingly.
func TestJavaKafkaAclsCommand(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	pki := testenv.NewPKI(t)
	dir := t.TempDir()
	for _, u := range []string{"admin", "alice"} {
		brokertest.SetUser(t, dir, u, "SCRAM-SHA-256", u+"-secret")
	}
	_, addrs := brokertest.StartListeners(t, func(c *broker.Config) {
		c.DataDir = dir
		c.TLS = broker.TLSFiles{CertFile: pki.CertFile, KeyFile: pki.KeyFile}
		c.Authorizer = true
		c.SuperUsers = []string{"User:admin"}
	}, broker.SASLSSL)
	addr := addrs[broker.SASLSSL]
	as := func(user string) *kgo.Client {
		return brokertest.NewClient(t, addr, kgo.DialTLSConfig(brokertest.ClientTLS(t, pki.Pool, "", "")),
			kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism()),
			kgo.RequestRetries(0), kgo.RetryTimeout(2*time.Second))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := kadm.NewClient(as("admin"))
	if _, err := admin.CreateTopics(ctx, 1, 1, nil, "orders", "logs-app", "other"); err != nil {
		t.Fatal(err)
	}

	config := javaSCRAMConfig(t, pki, "admin", "admin-secret")
	acls := func(args ...string) testenv.KafkaToolRun {
		return testenv.KafkaToolRun{Class: testenv.KafkaAcls, Args: append([]string{"--bootstrap-server", addr, "--command-config", config}, args...)}
	}
	alicesWrite := func(more ...string) []string {
		return append([]string{"--allow-principal", "User:alice", "--operation", "Write"}, more...)
	}
	literal := []string{"--topic", "orders"}
	prefixed := []string{"--topic", "logs-", "--resource-pattern-type", "prefixed"}
	mustRun := func(runs ...testenv.KafkaToolRun) []testenv.KafkaToolResult {
		t.Helper()
		results := testenv.RunKafkaTools(t, runs...)
		for i, r := range results {
			if r.Exit != 0 || strings.Contains(r.Stderr, "ERROR ") || strings.Contains(r.Stderr, "Error") {
				t.Fatalf("run %d: %v", i, r)
			}
		}
		return results
	}
	// alicesACLs lists alice's topic ACLs as DescribeACLs returns them.
	alicesACLs := func() []string {
		t.Helper()
		rs, err := admin.DescribeACLs(ctx, kadm.NewACLs().Topics().ResourcePatternType(kadm.ACLPatternAny).
			Allow("User:alice").AllowHosts().Operations())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rs {
			if r.Err != nil {
				t.Fatalf("DescribeACLs: %v %s", r.Err, r.ErrMessage)
			}
			for _, d := range r.Described {
				got = append(got, fmt.Sprintf("%s %s %s %s %s %s", d.Pattern, d.Name, d.Principal, d.Host, d.Operation, d.Permission))
			}
		}
		slices.Sort(got)
		return got
	}
	writes := func(topic string) error {
		return as("alice").ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}
	wantWrites := func(topic string, want error) {
		t.Helper()
		if err := writes(topic); (want == nil) != (err == nil) || !errors.Is(err, want) {
			t.Errorf("alice writing %s: got %v, want %v", topic, err, want)
		}
	}

	if err := writes("orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice writing orders before any ACL: got %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	added := mustRun(
		acls(append(alicesWrite("--add"), literal...)...),
		acls(append(alicesWrite("--add"), prefixed...)...),
		acls(append([]string{"--list"}, literal...)...),
		acls(append([]string{"--list"}, prefixed...)...),
	)
	for i, want := range map[int]string{
		2: "name=orders, patternType=LITERAL",
		3: "name=logs-, patternType=PREFIXED",
	} {
		if out := added[i].Stdout; !strings.Contains(out, want) || !strings.Contains(out, "principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW") {
			t.Errorf("kafka-acls --list printed\n%s\nwant %q with alice's WRITE", out, want)
		}
	}
	wantACLs := []string{
		"LITERAL orders User:alice * WRITE ALLOW",
		"PREFIXED logs- User:alice * WRITE ALLOW",
	}
	if got := alicesACLs(); !slices.Equal(got, wantACLs) {
		t.Errorf("after kafka-acls --add, DescribeACLs shows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantACLs, "\n"))
	}
	wantWrites("orders", nil)
	wantWrites("logs-app", nil)
	wantWrites("other", kerr.TopicAuthorizationFailed)

	removed := mustRun(
		acls(append(alicesWrite("--remove", "--force"), literal...)...),
		acls(append(alicesWrite("--remove", "--force"), prefixed...)...),
		acls("--list", "--principal", "User:alice"),
	)
	if out := removed[2].Stdout; strings.Contains(out, "principal=User:alice") {
		t.Errorf("kafka-acls --list after --remove still shows alice's ACLs:\n%s", out)
	}
	if got := alicesACLs(); len(got) != 0 {
		t.Errorf("after kafka-acls --remove, DescribeACLs still shows\n%s", strings.Join(got, "\n"))
	}
	wantWrites("orders", kerr.TopicAuthorizationFailed)
	wantWrites("logs-app", kerr.TopicAuthorizationFailed)
}
