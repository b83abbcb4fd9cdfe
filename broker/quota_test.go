package broker_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// quotaEntity is a DescribeClientQuotas/AlterClientQuotas entity in a test:
// "user=alice", "client-id=<default>", joined with ",".
func quotaEntity(spec string) []kmsg.AlterClientQuotasRequestEntryEntity {
	var out []kmsg.AlterClientQuotasRequestEntryEntity
	for _, part := range strings.Split(spec, ",") {
		typ, name, _ := strings.Cut(part, "=")
		e := kmsg.NewAlterClientQuotasRequestEntryEntity()
		e.Type = typ
		if name != "<default>" {
			e.Name = &name
		}
		out = append(out, e)
	}
	return out
}

// alterQuota sets (or with value 0 removes) one quota and returns the
// entry's error code and message.
func alterQuota(t *testing.T, cl *kgo.Client, entity, key string, value float64) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	entry.Entity = quotaEntity(entity)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, value, value == 0
	entry.Ops = append(entry.Ops, op)
	req.Entries = append(req.Entries, entry)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("AlterClientQuotas: %v", err)
	}
	msg := ""
	if m := resp.Entries[0].ErrorMessage; m != nil {
		msg = *m
	}
	return resp.Entries[0].ErrorCode, msg
}

func component(typ string, match kmsg.QuotasMatchType, name string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType = typ, match
	if name != "" {
		c.Match = &name
	}
	return c
}

// TestClientQuotasAlterDescribePersist: quotas set with AlterClientQuotas
// are described with Kafka's filters, refused when Tributary would not
// enforce them, and survive a restart.
func TestClientQuotasAlterDescribePersist(t *testing.T) {
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir))
	cl := newClient(t, b.Addr)
	for _, s := range []struct {
		entity, key string
		value       float64
	}{
		{"user=alice", "producer_byte_rate", 1024},
		{"user=alice", "consumer_byte_rate", 2048},
		{"user=alice,client-id=app", "producer_byte_rate", 512},
		{"user=<default>", "producer_byte_rate", 100},
		{"client-id=<default>", "consumer_byte_rate", 4096},
		{"client-id=batch", "producer_byte_rate", 8192},
		{"client-id=batch", "producer_byte_rate", 0}, // removed again
	} {
		if code, msg := alterQuota(t, cl, s.entity, s.key, s.value); code != 0 {
			t.Fatalf("%s %s=%v: %v %s", s.entity, s.key, s.value, kerr.ErrorForCode(code), msg)
		}
	}
	for _, bad := range []struct {
		entity, key string
		value       float64
	}{
		{"user=alice", "request_percentage", 50},
		{"ip=127.0.0.1", "producer_byte_rate", 10},
		{"user=alice", "producer_byte_rate", 0.5},
		{"user=alice,user=bob", "producer_byte_rate", 10},
	} {
		if code, msg := alterQuota(t, cl, bad.entity, bad.key, bad.value); code != kerr.InvalidRequest.Code || msg == "" {
			t.Errorf("%s %s=%v: got %v %q, want INVALID_REQUEST with a reason", bad.entity, bad.key, bad.value, kerr.ErrorForCode(code), msg)
		}
	}

	const exact, def, anyName = 0, 1, 2
	check := func(name string, strict bool, want []string, comps ...kmsg.DescribeClientQuotasRequestComponent) {
		t.Helper()
		got := describeQuotas(t, cl, strict, comps...)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	alice := "user=alice: consumer_byte_rate=2048,producer_byte_rate=1024"
	aliceApp := "user=alice,client-id=app: producer_byte_rate=512"
	userDefault := "user=<default>: producer_byte_rate=100"
	clientDefault := "client-id=<default>: consumer_byte_rate=4096"
	verify := func() {
		t.Helper()
		check("everything", false, []string{clientDefault, userDefault, aliceApp, alice})
		check("user alice", false, []string{aliceApp, alice}, component("user", exact, "alice"))
		check("user alice, strict", true, []string{alice}, component("user", exact, "alice"))
		check("default user", false, []string{userDefault}, component("user", def, ""))
		check("any user, strict", true, []string{userDefault, alice}, component("user", anyName, ""))
		check("any client id", false, []string{clientDefault, aliceApp}, component("client-id", anyName, ""))
	}
	verify()

	b.Stop()
	b = testenv.StartBroker(t, testenv.WithDataDir(dir))
	cl = newClient(t, b.Addr)
	verify()
}

// TestProducerThrottledToQuota: a franz-go producer sending as fast as it
// can under a producer_byte_rate is told to wait (throttle_time_ms > 0)
// and its acknowledged rate comes down to about the quota.
func TestProducerThrottledToQuota(t *testing.T) {
	testenv.Slow(t, "produces under a byte-rate quota for seconds")
	b := testenv.StartBroker(t)
	const quota = 200 << 10
	if code, msg := alterQuota(t, newClient(t, b.Addr), "client-id=bulk-writer", "producer_byte_rate", quota); code != 0 {
		t.Fatalf("setting the quota: %v %s", kerr.ErrorForCode(code), msg)
	}
	createTopic(t, b.Addr, "throttled", 1, nil)
	var throttles atomic.Int64
	cl := newClient(t, b.Addr, kgo.ClientID("bulk-writer"), kgo.DefaultProduceTopic("throttled"),
		kgo.MaxBufferedRecords(64), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.WithHooks(throttleHook{&throttles}))

	value := make([]byte, 1024)
	var acked atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for time.Since(start) < 4*time.Second {
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			acked.Add(int64(len(r.Value)))
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	rate := float64(acked.Load()) / elapsed.Seconds()
	t.Logf("%d bytes acknowledged in %v: %.0f B/s against a quota of %d B/s; %d throttled responses",
		acked.Load(), elapsed, rate, quota, throttles.Load())
	if throttles.Load() == 0 {
		t.Error("no response carried a throttle time")
	}
	if rate > 2*quota || rate < quota/5 {
		t.Errorf("producer rate %.0f B/s is not near its quota of %d B/s", rate, quota)
	}
}

// TestConsumerThrottledToQuota: a franz-go consumer reading a backlog under
// a consumer_byte_rate is throttled and reads at about the quota.
func TestConsumerThrottledToQuota(t *testing.T) {
	testenv.Slow(t, "consumes under a byte-rate quota for seconds")
	b := testenv.StartBroker(t)
	const quota = 300 << 10
	const total = 1200 << 10
	createTopic(t, b.Addr, "backlog", 1, nil)
	p := newClient(t, b.Addr, kgo.DefaultProduceTopic("backlog"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(16<<10))
	value := make([]byte, 1024)
	for range total / len(value) {
		p.Produce(context.Background(), &kgo.Record{Value: value}, nil)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, msg := alterQuota(t, p, "client-id=slow-reader", "consumer_byte_rate", quota); code != 0 {
		t.Fatalf("setting the quota: %v %s", kerr.ErrorForCode(code), msg)
	}
	var throttles atomic.Int64
	c := newClient(t, b.Addr, kgo.ClientID("slow-reader"), kgo.ConsumeTopics("backlog"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10),
		kgo.WithHooks(throttleHook{&throttles}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	read := 0
	for read < total {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d bytes: %v", read, err)
		}
		fs.EachRecord(func(r *kgo.Record) { read += len(r.Value) })
	}
	elapsed := time.Since(start)
	rate := float64(read) / elapsed.Seconds()
	t.Logf("%d bytes read in %v: %.0f B/s against a quota of %d B/s; %d throttled responses",
		read, elapsed, rate, quota, throttles.Load())
	if throttles.Load() == 0 {
		t.Error("no fetch response carried a throttle time")
	}
	if rate > 2*quota {
		t.Errorf("consumer rate %.0f B/s is far over its quota of %d B/s", rate, quota)
	}
}

// throttleHook counts responses that carried a throttle time.
type throttleHook struct{ n *atomic.Int64 }

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// TestClusterQuotasApplyOnEveryBroker: a quota altered through broker 1 is
// stored in ZooKeeper and described (and so enforced) by broker 2 once its
// watch fires.
func TestClusterQuotasApplyOnEveryBroker(t *testing.T) {
	_, brokers := testenv.StartCluster(t, 2)
	if code, msg := alterQuota(t, newClient(t, brokers[0].Addr), "user=alice", "producer_byte_rate", 4096); code != 0 {
		t.Fatalf("altering through broker 1: %v %s", kerr.ErrorForCode(code), msg)
	}
	cl2 := newClient(t, brokers[1].Addr)
	want := "user=alice: producer_byte_rate=4096"
	testenv.Eventually(t, 30*time.Second, "broker 2 describes the quota altered through broker 1", func() bool {
		got := describeQuotas(t, cl2, false)
		return len(got) == 1 && got[0] == want
	})
}

// TestUserQuotaAppliesToSASLUser: a quota for user alice throttles the
// principal User:alice logged in with SASL.
func TestUserQuotaAppliesToSASLUser(t *testing.T) {
	testenv.Slow(t, "produces under a byte-rate quota for seconds")
	addr := startReauth(t, 0)
	login := kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	admin := newClient(t, addr, login)
	if code, msg := alterQuota(t, admin, "user=alice", "producer_byte_rate", 32<<10); code != 0 {
		t.Fatalf("setting the quota: %v %s", kerr.ErrorForCode(code), msg)
	}
	var throttles atomic.Int64
	cl := newClient(t, addr, login, kgo.DefaultProduceTopic("per-user"), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.WithHooks(throttleHook{&throttles}))
	value := make([]byte, 16<<10)
	for i := range 8 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	if throttles.Load() == 0 {
		t.Error("128 KiB produced by User:alice under her 32 KiB/s quota were never throttled")
	}
}

// TestQuotaAPIsNeedClusterACLs: with an authorizer, describing quotas
// needs DESCRIBE_CONFIGS and altering them ALTER_CONFIGS on the cluster.
func TestQuotaAPIsNeedClusterACLs(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"admin", "frank"} {
		setUser(t, dir, u, "SCRAM-SHA-256", u+"-secret")
	}
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.DataDir, c.Authorizer, c.SuperUsers = dir, true, []string{"User:admin"}
	}, broker.SASLPlaintext)
	as := func(user string) *kgo.Client {
		return newClient(t, addrs[broker.SASLPlaintext], kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism()))
	}
	frank := as("frank")
	if code, _ := alterQuota(t, frank, "user=frank", "producer_byte_rate", 1<<30); code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("frank altering his own quota: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	resp, err := kmsg.NewPtrDescribeClientQuotasRequest().RequestWith(context.Background(), frank)
	if err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("frank describing quotas: %v %v, want CLUSTER_AUTHORIZATION_FAILED", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	admin := as("admin")
	if code, msg := alterQuota(t, admin, "user=frank", "producer_byte_rate", 1024); code != 0 {
		t.Fatalf("admin altering frank's quota: %v %s", kerr.ErrorForCode(code), msg)
	}
	if got := describeQuotas(t, admin, false); len(got) != 1 || got[0] != "user=frank: producer_byte_rate=1024" {
		t.Errorf("admin describing quotas: %q", got)
	}
}

// A default-user quota throttles every user but the broker's own
// in-process clients (Internal:tributary): the standalone registry's
// writes to _schemas go at full speed while an ordinary client writing the
// same bytes is told to wait.
func TestDefaultUserQuotaSparesInternalClients(t *testing.T) {
	testenv.Slow(t, "produces under a 1 KiB/s quota")
	b := testenv.StartBroker(t)
	if code, msg := alterQuota(t, newClient(t, b.Addr), "user=<default>", "producer_byte_rate", 1024); code != 0 {
		t.Fatalf("setting the quota: %v %s", kerr.ErrorForCode(code), msg)
	}
	produce := func(cl *kgo.Client, topic string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		value := make([]byte, 16<<10)
		for range 8 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: value}).FirstErr(); err != nil {
				t.Fatalf("producing to %s: %v", topic, err)
			}
		}
	}
	var internal, ordinary atomic.Int64
	in, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.Dialer(b.DialInternal), kgo.ClientID(broker.RegistryClientID), kgo.ProducerLinger(0),
		kgo.AllowAutoTopicCreation(), kgo.WithHooks(throttleHook{&internal}))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	produce(in, "_schemas")
	produce(newClient(t, b.Addr, kgo.ProducerLinger(0), kgo.AllowAutoTopicCreation(), kgo.WithHooks(throttleHook{&ordinary})), "clicks")
	if internal.Load() != 0 {
		t.Errorf("%d responses to the in-process client carried a throttle time, want none", internal.Load())
	}
	if ordinary.Load() == 0 {
		t.Error("no response to the ordinary client carried a throttle time: the default-user quota did not apply")
	}
}
