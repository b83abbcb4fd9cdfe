package registry_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/schema/internal/srtest"
	"github.com/tributary-io/tributary/schema/registry"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// Integration tests of the _schemas store on a real broker (testBroker).
// Each test uses a topic of its own, so runs never see each other's state.

func uniqueTopic(t *testing.T) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("_schemas-%s-%d", name, time.Now().UnixNano())
}

func kafkaNode(t *testing.T, broker, topic string) *srtest.Registry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := registry.New(ctx, registry.Config{Bootstrap: []string{broker}, Topic: topic, Logger: srtest.Quiet()})
	if err != nil {
		t.Fatalf("start registry node on %s: %v", broker, err)
	}
	return srtest.Serve(t, srv)
}

// TestKafkaTopicCreated: the first node creates the topic with one
// partition, kept forever and compacted.
func TestKafkaTopicCreated(t *testing.T) {
	broker, topic := testBroker(t), uniqueTopic(t)
	kafkaNode(t, broker, topic)

	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	details, err := adm.ListTopics(ctx, topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, details[topic].Err)
	}
	if n := len(details[topic].Partitions); n != 1 {
		t.Errorf("%s has %d partitions, want 1", topic, n)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	rc, err := configs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("configs of %s: %v %v", topic, err, rc.Err)
	}
	got := map[string]string{}
	for _, c := range rc.Configs {
		got[c.Key] = c.MaybeValue()
	}
	if got["retention.ms"] != "-1" || got["cleanup.policy"] != "compact" {
		t.Errorf("%s has retention.ms=%q cleanup.policy=%q, want -1 and compact", topic, got["retention.ms"], got["cleanup.policy"])
	}
}

// TestKafkaRefusesManyPartitions: with more than one partition nodes could
// read writes in different orders, so a node refuses to start.
func TestKafkaRefusesManyPartitions(t *testing.T) {
	broker, topic := testBroker(t), uniqueTopic(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	_, err = registry.New(context.Background(), registry.Config{Bootstrap: []string{broker}, Topic: topic, Logger: srtest.Quiet()})
	if err == nil || !strings.Contains(err.Error(), "3 partitions") {
		t.Fatalf("New on a 3-partition topic: %v, want an error naming the partitions", err)
	}
}

// TestKafkaNodesAgree: two nodes on one broker race registrations and
// agree on every id and version, and so does a node started afterwards.
func TestKafkaNodesAgree(t *testing.T) {
	broker, topic := testBroker(t), uniqueTopic(t)
	a, b := kafkaNode(t, broker, topic), kafkaNode(t, broker, topic)
	raceRegistrations(t, 10, a, b)
	agree(t, a, b, kafkaNode(t, broker, topic))
}

// TestKafkaRestartAfterKill registers schemas on a registry node in another
// process, kills it with SIGKILL, and checks that a new node serves every
// schema, version, delete and level the killed one acknowledged.
func TestKafkaRestartAfterKill(t *testing.T) {
	testenv.Needs(t, testenv.Helper)
	broker, topic := testBroker(t), uniqueTopic(t)
	ctx := context.Background()

	cmd := exec.Command(os.Args[0], "-test.run=^TestKafkaHelperNode$")
	cmd.Env = append(os.Environ(), "TRIBUTARY_REGISTRY_HELPER="+broker+","+topic)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	url := ""
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "listening "); ok {
			url = u
			break
		}
	}
	if url == "" {
		t.Fatal("helper node did not start")
	}
	go func() {
		for lines.Scan() { // keep the pipe drained
		}
	}()
	victim, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}

	type acked struct {
		subject string
		version int
		id      int
		schema  string
	}
	var all []acked
	for i := range 12 {
		subject := fmt.Sprintf("s%d", i%3)
		schema := rec(fmt.Sprintf("f%d:string", i))
		if i%3 == 1 {
			schema = rec("common:int") // the same schema in several subjects
		}
		if r := victim.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, subject); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		ss, err := victim.CreateSchema(ctx, subject, sr.Schema{Schema: schema})
		if err != nil {
			t.Fatalf("register on the helper node: %v", err)
		}
		all = append(all, acked{subject, ss.Version, ss.ID, schema})
	}
	if err := victim.DeleteSchema(ctx, "s0", 1, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if r := victim.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFullTransitive}); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown code runs
		t.Fatal(err)
	}
	cmd.Wait()

	n := kafkaNode(t, broker, topic)
	maxID := 0
	for _, a := range all {
		got, err := n.Client.SchemaByVersion(sr.WithParams(ctx, sr.ShowDeleted), a.subject, a.version)
		if err != nil || got.ID != a.id || got.Schema.Schema != a.schema {
			t.Errorf("%s v%d after restart: id %d %q (%v), want id %d %q", a.subject, a.version, got.ID, got.Schema.Schema, err, a.id, a.schema)
		}
		s, err := n.Client.SchemaByID(ctx, a.id)
		if err != nil || s.Schema != a.schema {
			t.Errorf("id %d after restart: %q (%v)", a.id, s.Schema, err)
		}
		maxID = max(maxID, a.id)
	}
	if _, err := n.Client.SchemaByVersion(ctx, "s0", 1); err == nil {
		t.Error("s0 v1 was soft-deleted before the kill but is visible after restart")
	}
	if r := n.Client.Compatibility(ctx); r[0].Err != nil || r[0].Level != sr.CompatFullTransitive {
		t.Errorf("global level after restart: %v (%v)", r[0].Level, r[0].Err)
	}
	// Registering an acknowledged schema again returns its id; a new
	// schema gets a new id, never one the killed node handed out.
	if id, err := n.Client.RegisterSchema(ctx, "s2", sr.Schema{Schema: all[2].schema}, -1, -1); err != nil || id != all[2].id {
		t.Errorf("re-register after restart: id %d (%v), want %d", id, err, all[2].id)
	}
	if id, err := n.Client.RegisterSchema(ctx, "fresh", sr.Schema{Schema: rec("new:bytes")}, -1, -1); err != nil || id <= maxID {
		t.Errorf("new schema after restart: id %d (%v), want > %d", id, err, maxID)
	}
}

// TestKafkaHelperNode is the registry process TestKafkaRestartAfterKill
// kills; it does nothing unless started by it.
func TestKafkaHelperNode(t *testing.T) {
	spec := os.Getenv("TRIBUTARY_REGISTRY_HELPER")
	if spec == "" {
		t.Skip("runs only as TestKafkaRestartAfterKill's child process")
	}
	broker, topic, _ := strings.Cut(spec, ",")
	ctx := context.Background()
	srv, err := registry.New(ctx, registry.Config{Bootstrap: []string{broker}, Topic: topic, Logger: srtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("listening http://%s\n", ln.Addr())
	srv.Serve(ctx, ln) // until killed
}

// TestKafkaDeletedSchemasTopicNeverReusesIDs: _schemas deleted on a real
// broker, then the registry restarted. Before, the first new schema got id
// 1 again, and old records carrying id 1 decoded with it. Now the node
// serves reads but refuses writes, saying what happened and what to do;
// restarted with AcceptReset, it continues above the highest id handed
// out, and so does a node without a checkpoint that replays the topic.
func TestKafkaDeletedSchemasTopicNeverReusesIDs(t *testing.T) {
	broker, topic := testBroker(t), uniqueTopic(t)
	checkpoint := t.TempDir() + "/schema-registry-checkpoint"
	ctx := context.Background()
	start := func(checkpoint string, accept bool) *srtest.Registry {
		t.Helper()
		srv, err := registry.New(ctx, registry.Config{Bootstrap: []string{broker}, Topic: topic, Logger: srtest.Quiet(),
			Checkpoint: checkpoint, AcceptReset: accept})
		if err != nil {
			t.Fatalf("start registry node: %v", err)
		}
		return srtest.Serve(t, srv)
	}
	register := func(reg *srtest.Registry, subject, name string) (int, error) {
		ss, err := reg.Client.CreateSchema(ctx, subject, sr.Schema{Schema: fmt.Sprintf(`{"type":"record","name":%q,"fields":[]}`, name)})
		return ss.ID, err
	}

	first := start(checkpoint, false)
	for i, name := range []string{"A", "B"} {
		if id, err := register(first, name, name); err != nil || id != i+1 {
			t.Fatalf("register %s: id %d, %v", name, id, err)
		}
	}
	first.Server.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).DeleteTopic(ctx, topic); err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}

	refusing := start(checkpoint, false)
	id, err := register(refusing, "C", "C")
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != 50001 || !strings.Contains(re.Message, "deleted and created again") || !strings.Contains(re.Message, "--registry-accept-reset") {
		t.Fatalf("register after the topic was deleted: id %d, %v; want 50001 saying the topic was deleted and naming --registry-accept-reset", id, err)
	}
	if _, err := refusing.Client.Subjects(ctx); err != nil {
		t.Errorf("reads while writes are refused: %v", err)
	}
	refusing.Server.Close()

	accepted := start(checkpoint, true)
	if id, err := register(accepted, "C", "C"); err != nil || id != 3 {
		t.Fatalf("register after accepting the reset: id %d, %v; want 3", id, err)
	}
	if id, err := register(start("", false), "D", "D"); err != nil || id != 4 {
		t.Fatalf("register on a node without a checkpoint: id %d, %v; want 4", id, err)
	}
}
