package system_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// securedCluster is a `tributary standalone` whose only listener is
// SASL_SSL, with ACLs enforced, and a `tributary schema-registry` on it
// serving HTTPS with basic auth, whose own Kafka client logs in too.
type securedCluster struct {
	pki      *testenv.PKI
	broker   string // SASL_SSL address
	registry string // https URL
	dir      string // password and user info files
}

// secret writes a password (or user:password) file and returns its path.
func (c *securedCluster) secret(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, []byte(text+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// kafkaFlags are the client flags of user, with prefix ("" or "target-").
func (c *securedCluster) kafkaFlags(t *testing.T, prefix, user string) []string {
	return []string{"--" + prefix + "tls-ca", c.pki.CAFile, "--" + prefix + "sasl-mechanism", "SCRAM-SHA-512",
		"--" + prefix + "sasl-user", user, "--" + prefix + "sasl-password-file", c.secret(t, user+".pw", user+"-pw")}
}

// registryFlags are the registry client flags of user.
func (c *securedCluster) registryFlags(t *testing.T, prefix, user string) []string {
	return []string{"--" + prefix + "registry-user-info-file", c.secret(t, user+".info", user+":"+user+"-pw"),
		"--" + prefix + "registry-tls-ca", c.pki.CAFile}
}

// client is a kgo client of user over SASL_SSL.
func (c *securedCluster) client(t *testing.T, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.broker),
		kgo.DialTLSConfig(tlsTrusting(c.pki)),
		kgo.SASL(scram.Auth{User: user, Pass: user + "-pw"}.AsSha512Mechanism())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func startSecuredCluster(t *testing.T) *securedCluster {
	t.Helper()
	c := &securedCluster{pki: testenv.NewPKI(t), dir: t.TempDir()}
	dataDir := t.TempDir()
	creds := broker.OpenCredentialFile(broker.CredentialFilePath(dataDir))
	for _, u := range []string{"admin", "registry", "pipeline", "intruder"} {
		if err := creds.Set(u, "SCRAM-SHA-512", u+"-pw", broker.DefaultSCRAMIterations); err != nil {
			t.Fatal(err)
		}
	}
	c.broker = testenv.FreeAddr(t)
	b := testenv.StartProcess(t, "standalone", "--data-dir", dataDir, "--registry-listen=",
		"--listeners", "SASL_SSL://"+c.broker, "--tls-cert", c.pki.CertFile, "--tls-key", c.pki.KeyFile,
		"--authorizer", "--super-users", "User:admin")
	testenv.WaitListening(t, b, c.broker, 60*time.Second)

	// The registry may use its topic; the pipeline user everything else.
	// The intruder has no ACL at all.
	adm := kadm.NewClient(c.client(t, "admin"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, acl := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:registry").AllowHosts("*").Topics("_schemas").Operations(kadm.OpAll),
		kadm.NewACLs().Allow("User:pipeline").AllowHosts("*").Topics("*").Groups("*").Clusters().Operations(kadm.OpAll),
		// The mirror copies in transactions of producers named tributary-mirror/...
		kadm.NewACLs().Allow("User:pipeline").AllowHosts("*").TransactionalIDs("tributary-mirror/").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite, kadm.OpDescribe),
	} {
		res, err := adm.CreateACLs(ctx, acl)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("creating ACL %+v: %v", r, r.Err)
			}
		}
	}

	roles := c.secret(t, "roles", "pipeline = writer\nadmin = admin")
	regAddr := testenv.FreeAddr(t)
	r := testenv.StartProcess(t, append([]string{"schema-registry", "--bootstrap", c.broker, "--listen", regAddr,
		"--registry-tls-cert", c.pki.CertFile, "--registry-tls-key", c.pki.KeyFile,
		"--registry-auth", "basic", "--registry-roles", roles, "--credentials-data-dir", dataDir},
		c.kafkaFlags(t, "", "registry")...)...)
	testenv.WaitListening(t, r, regAddr, 60*time.Second)
	c.registry = "https://" + regAddr
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsTrusting(c.pki)}}
	testenv.Eventually(t, 60*time.Second, "the registry to replay _schemas over SASL_SSL", func() bool {
		req, _ := http.NewRequest("GET", c.registry+"/subjects", nil)
		req.SetBasicAuth("pipeline", "pipeline-pw")
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return c
}

// runAll runs the binary to completion with stdin and returns stdout, stderr
// and the exit status.
func runAll(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	}
	t.Fatalf("tributary %v: %v", args, err)
	return "", "", -1
}

// committedRecords counts the records of topic that its read_committed
// readers see: the mirror copies in transactions, whose markers take
// offsets too.
func committedRecords(t *testing.T, cl *kgo.Client, topic string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return -1
	}
	ends, offsets := map[int32]int64{}, map[int32]kgo.Offset{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			ends[o.Partition], offsets[o.Partition] = o.Offset, kgo.NewOffset().AtStart()
		}
	})
	if len(ends) == 0 {
		return 0
	}
	rc, err := kgo.NewClient(append(cl.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())...)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var n int64
	for done := 0; done < len(ends); {
		fs := rc.PollFetches(ctx)
		if ctx.Err() != nil {
			return -1
		}
		fs.EachRecord(func(r *kgo.Record) {
			end := ends[r.Partition]
			if r.Offset >= end {
				return
			}
			if !r.Attrs.IsControl() {
				n++
			}
			if r.Offset == end-1 {
				done++
			}
		})
	}
	return n
}

// endOffset is the sum of a topic's partition end offsets.
func endOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return -1
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// startSecuredSource runs a live cluster of one `tributary broker` with a
// PLAINTEXT and a SASL_SSL listener, whose users (pipeline, with the
// password pipeline-pw) are in ZooKeeper, and returns its ZooKeeper
// connect string and PLAINTEXT address.
func startSecuredSource(t *testing.T, c *securedCluster) (connect, plain string) {
	t.Helper()
	connect = testenv.StartZooKeeper(t)
	users := testenv.StartProcess(t, "users", "set", "--zookeeper", connect, "--user", "pipeline",
		"--mechanism", "SCRAM-SHA-512", "--password-file", c.secret(t, "pipeline.pw", "pipeline-pw"))
	<-users.Done()
	if code := users.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("users set --zookeeper: exit %d\n%s", code, users.Output.String())
	}
	plain, secure := testenv.FreeAddr(t), testenv.FreeAddr(t)
	b := testenv.StartProcess(t, "broker", "--id", "1", "--zookeeper", connect, "--data-dir", t.TempDir(),
		"--listeners", "PLAINTEXT://"+plain+",SASL_SSL://"+secure, "--tls-cert", c.pki.CertFile, "--tls-key", c.pki.KeyFile)
	testenv.WaitListening(t, b, secure, 60*time.Second)
	return connect, plain
}

// The whole pipeline on secured clusters: events produced to a live
// cluster (schemas registered over HTTPS with basic auth) are mirrored,
// read over the live cluster's SASL_SSL listener, into a SASL_SSL
// cluster with ACLs; loaded from it by `load` and by a job spec; and the
// audit report read from it shows every tier complete. A user without
// ACLs is refused.
func TestSecuredPipeline(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	c := startSecuredCluster(t)
	connect, livePlain := startSecuredSource(t, c)

	window := audit.WindowStart(time.Now().Add(-3*time.Hour), audit.DefaultWindow)
	const events = 30
	var in strings.Builder
	for i := range events {
		fmt.Fprintf(&in, `{"header": {"time": %d}, "memberId": %d, "pageKey": "jobs"}`+"\n", window.Add(time.Duration(i)*time.Second).UnixMilli(), i)
	}
	schemaFile := filepath.Join("..", "..", "testdata", "schemas", "pageview.avsc")
	produce := append([]string{"produce", "--brokers", livePlain, "--topic", "pageviews", "--schema", schemaFile,
		"--registry", c.registry, "--server", "fe-1"}, c.registryFlags(t, "", "pipeline")...)
	if _, stderr, code := runAll(t, in.String(), produce...); code != 0 {
		t.Fatalf("produce with the registry's credentials: exit %d\n%s", code, stderr)
	}

	// An intruder, authenticated but without ACLs, is refused.
	intruder := []string{"produce", "--brokers", c.broker, "--topic", "pageviews", "--acks", "1"}
	if _, stderr, code := runAll(t, "x\n", append(intruder, c.kafkaFlags(t, "", "intruder")...)...); code == 0 || !strings.Contains(stderr, "AUTHORIZATION") {
		t.Fatalf("produce as a user without ACLs: exit %d, want a refusal naming authorization\n%s", code, stderr)
	}

	// Mirror into the secured cluster, counting the mirror tier.
	status := testenv.FreeAddr(t)
	mirror := testenv.StartProcess(t, append(append([]string{"mirror", "--source", "dc1=" + connect, "--target", c.broker,
		"--target-registry", c.registry, "--audit", "--commit-interval", "100ms", "--status", status},
		append(c.kafkaFlags(t, "source-", "pipeline"), c.kafkaFlags(t, "target-", "pipeline")...)...), c.registryFlags(t, "target-", "pipeline")...)...)
	testenv.WaitListening(t, mirror, status, 60*time.Second)
	liveAdm := kadm.NewClient(newPlainClient(t, livePlain))
	pipeline := c.client(t, "pipeline")
	wantAudit := endOffset(t, liveAdm, audit.DefaultTopic)
	testenv.Eventually(t, 90*time.Second, "the mirror to copy the events and the producer's counts", func() bool {
		return committedRecords(t, pipeline, "pageviews") == events && committedRecords(t, pipeline, audit.DefaultTopic) >= wantAudit
	})
	if err := mirror.Stop(30 * time.Second); err != nil { // publishes the mirror tier's last counts
		t.Fatalf("mirror: %v\n%s", err, mirror.Output.String())
	}

	// Load a part with `tributary load`, the rest with a job spec.
	wh := "file://" + t.TempDir()
	load := append(append([]string{"load", "--brokers", c.broker, "--registry", c.registry, "--topics", "pageviews",
		"--warehouse", wh, "--max-records", "10", "--audit", "--json", "--quiet"},
		c.kafkaFlags(t, "", "pipeline")...), c.registryFlags(t, "", "pipeline")...)
	out, stderr, code := runAll(t, "", load...)
	var sum struct {
		Committed bool  `json:"committed"`
		Records   int64 `json:"records"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || !sum.Committed || sum.Records != 10 {
		t.Fatalf("load over SASL_SSL: exit %d, summary %+v\n%s%s", code, sum, out, stderr)
	}
	jobDir := t.TempDir()
	spec := fmt.Sprintf(`brokers: [%s]
registry: %s
topics: [pageviews]
warehouse: %s
schedule: every 1h
audit: true
security:
  tls_ca: %s
  sasl_mechanism: SCRAM-SHA-512
  sasl_user: pipeline
  sasl_password_file: pipeline.pw
registry_security:
  user_info_file: pipeline.info
  tls_ca: %s
`, c.broker, c.registry, wh, c.pki.CAFile, c.pki.CAFile)
	os.WriteFile(filepath.Join(jobDir, "pageviews.yaml"), []byte(spec), 0o600)
	// The spec names its secrets relative to itself.
	os.WriteFile(filepath.Join(jobDir, "pipeline.pw"), []byte("pipeline-pw\n"), 0o600)
	os.WriteFile(filepath.Join(jobDir, "pipeline.info"), []byte("pipeline:pipeline-pw\n"), 0o600)
	if out, stderr, code := runAll(t, "", "jobs", "run", "--dir", jobDir, "--state-dir", t.TempDir(), "--no-retry", "pageviews"); code != 0 || !strings.Contains(out, "20 records") {
		t.Fatalf("jobs run with a secured spec: exit %d, want 20 records loaded\n%s%s", code, out, stderr)
	}

	// The audit reads its topic from the secured cluster: every tier has
	// every event.
	from, to := window.Format(time.RFC3339), window.Add(audit.DefaultWindow).Format(time.RFC3339)
	report := append(append([]string{"audit", "report", "--brokers", c.broker, "--registry", c.registry,
		"--from", from, "--to", to, "--format", "json"}, c.kafkaFlags(t, "", "pipeline")...), c.registryFlags(t, "", "pipeline")...)
	out, stderr, code = runAll(t, "", report...)
	var rows []struct {
		Tier     string `json:"tier"`
		Produced int64  `json:"produced"`
		Received int64  `json:"received"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("audit report over SASL_SSL: exit %d\n%s%s", code, out, stderr)
	}
	tiers := map[string]int64{}
	for _, r := range rows {
		if r.Produced != events {
			t.Errorf("tier %s: produced %d, want %d", r.Tier, r.Produced, events)
		}
		tiers[r.Tier] = r.Received
	}
	for _, tier := range []string{audit.TierMirror, audit.TierWarehouse} {
		if tiers[tier] != events {
			t.Errorf("tier %s received %d, want %d (report: %s)", tier, tiers[tier], events, out)
		}
	}
}

func newPlainClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// tlsTrusting is a client TLS configuration trusting the test CA.
func tlsTrusting(p *testenv.PKI) *tls.Config {
	return &tls.Config{RootCAs: p.Pool, MinVersion: tls.VersionTLS12}
}
