package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/clientsec"
	"github.com/tributary-io/tributary/internal/testenv"
)

// With the authorizer on and only a SASL_SSL listener, followers connect
// over TLS, log in to their leader as the brokers' own super user and
// replicate (acks=all with
// min.insync.replicas 2 is answered); a user allowed to read the topic
// but without ClusterAction who sends fetches with a replica id is
// refused CLUSTER_AUTHORIZATION_FAILED, and its fetch moves neither the
// high watermark nor the ISR.
func TestReplicationOverSASLSSLWithTheAuthorizer(t *testing.T) {
	const topic = "secured"
	brokers, as := startSASLPair(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := kadm.NewClient(as("admin"))
	testenv.Eventually(t, 10*time.Second, "creating the topic with 2 replicas", func() bool {
		resp, err := admin.CreateTopic(ctx, 1, 2, nil, topic)
		return err == nil && (resp.Err == nil || resp.Err == kerr.TopicAlreadyExists)
	})
	if res, err := admin.CreateACLs(ctx, kadm.NewACLs().Topics(topic).Allow("User:frank").AllowHosts("*").
		Operations(kadm.OpRead, kadm.OpDescribe)); err != nil || res[0].Err != nil {
		t.Fatalf("allowing frank to read: %v %v", err, res)
	}

	producer := as("admin", kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	for _, v := range []string{"a", "b", "c"} {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("acks=all with min.insync.replicas 2 over SASL: %v", err)
		}
	}
	meta := partitionMeta(t, admin, topic)
	if len(meta.ISR) != 2 {
		t.Fatalf("isr %v, want both replicas", meta.ISR)
	}
	leader, follower := meta.Leader, 3-meta.Leader

	// The real follower pauses; a record taken with acks=1 stays above
	// the high watermark.
	resume := brokers[follower-1].PauseReplication()
	defer resume()
	one := as("admin", kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := one.ProduceSync(ctx, &kgo.Record{Value: []byte("d")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	end := func() int64 {
		ends, err := admin.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := ends.Lookup(topic, 0)
		return o.Offset
	}
	if got := end(); got != 3 {
		t.Fatalf("end offset %d with the follower paused, want 3", got)
	}

	// frank claims to be the follower, holding offset 4.
	frank := as("frank")
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = follower, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.CurrentLeaderEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = 4, -1, -1, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, frank.Broker(int(leader)))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("replica fetch without ClusterAction: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if got := end(); got != 3 {
		t.Fatalf("end offset %d after the refused replica fetch, want 3", got)
	}
	if isr := partitionMeta(t, admin, topic).ISR; !slices.Contains(isr, follower) || len(isr) != 2 {
		t.Fatalf("isr %v after the refused replica fetch", isr)
	}
	// frank may still read as a consumer, up to the high watermark.
	if got := consumeAs(t, frank, topic, 3); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("frank read %q", got)
	}
	resume()
	testenv.Eventually(t, 20*time.Second, "the resumed follower moves the high watermark", func() bool { return end() == 4 })
}

// With connections.max.reauth.ms set, a follower logs in to its leader
// again on the same connection before its session ends (KIP-368), as
// kgo does for clients: replication and acks=all go on without the
// leader closing the follower's connection for an expired session.
func TestFollowerReauthenticatesWithItsLeader(t *testing.T) {
	const topic = "reauth"
	brokers, as := startSASLPair(t, func(c *broker.Config) { c.ConnectionsMaxReauth = 2 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := kadm.NewClient(as("admin"))
	testenv.Eventually(t, 10*time.Second, "creating the topic with 2 replicas", func() bool {
		resp, err := admin.CreateTopic(ctx, 1, 2, nil, topic)
		return err == nil && (resp.Err == nil || resp.Err == kerr.TopicAlreadyExists)
	})
	producer := as("admin", kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(v string) {
		t.Helper()
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("acks=all %s: %v", v, err)
		}
	}
	produce("first")
	follower := brokers[2-partitionMeta(t, admin, topic).Leader]
	dials := follower.ReplicaDials()
	// Three sessions' worth of replication, records coming all along.
	for i := range 24 {
		produce(fmt.Sprint(i))
		time.Sleep(250 * time.Millisecond)
	}
	if got := follower.ReplicaDials(); got != dials {
		t.Fatalf("the follower connected to its leader %d more times: its session expired instead of being renewed", got-dials)
	}
	if got := follower.ReplicaRenewals(); got < 2 {
		t.Fatalf("the follower re-authenticated %d times in 6 s of 2 s sessions, want at least 2", got)
	}
	if isr := partitionMeta(t, admin, topic).ISR; len(isr) != 2 {
		t.Fatalf("isr %v, want both replicas", isr)
	}
}

// consumeAs reads n records of topic from the start through cl's seeds
// and security.
func consumeAs(t *testing.T, cl *kgo.Client, topic string, n int) []string {
	t.Helper()
	c, err := kgo.NewClient(append(cl.Opts(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(got), n)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// startSASLPair starts ZooKeeper and two brokers whose only listener is
// SASL_SSL, with the authorizer on, users broker (their super user, whom
// followers log in as), admin (a super user) and frank (password
// <user>-secret), min.insync.replicas 2, and configure's settings. as
// makes a client logged in as a user, seeded with both brokers.
func startSASLPair(t *testing.T, configure func(*broker.Config)) (brokers []*broker.Broker, as func(user string, opts ...kgo.Opt) *kgo.Client) {
	t.Helper()
	connect := testenv.StartZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	zs, err := cluster.DialZooKeeper(ctx, connect, testenv.Logger(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer zs.Close()
	users := broker.NewZooKeeperCredentials(zs)
	for _, u := range []string{"broker", "admin", "frank"} {
		cred, err := broker.NewSCRAMCredential("SCRAM-SHA-256", u, u+"-secret", broker.DefaultSCRAMIterations)
		if err != nil {
			t.Fatal(err)
		}
		if err := users.Put(u, "SCRAM-SHA-256", cred); err != nil {
			t.Fatal(err)
		}
	}
	pki := newTestPKI(t)
	passFile := filepath.Join(t.TempDir(), "broker-password")
	if err := os.WriteFile(passFile, []byte("broker-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	brokers = make([]*broker.Broker, 2)
	addrs := make([]string, 2)
	for i := range brokers {
		var a map[broker.SecurityProtocol]string
		brokers[i], a = startMember(t, func(c *broker.Config, eps []cluster.Endpoint) {
			self := broker.SelfWithEndpoints(cluster.Broker{ID: int32(i + 1)}, eps)
			meta, err := cluster.JoinZooKeeper(context.Background(), connect, self, testenv.Logger(t, 0),
				cluster.WithSessionTimeout(testenv.ClusterSessionTimeout))
			if err != nil {
				t.Fatal(err)
			}
			c.Metadata, c.Authorizer, c.SuperUsers = meta, true, []string{"User:broker", "User:admin"}
			c.ReplicaLagMax, c.MinInsyncReplicas = time.Hour, 2
			c.TLS = broker.TLSFiles{CertFile: pki.certFile, KeyFile: pki.keyFile}
			c.InterBroker = clientsec.Kafka{TLSCA: pki.caFile,
				SASLMechanism: "SCRAM-SHA-256", SASLUser: "broker", SASLPasswordFile: passFile}
			if configure != nil {
				configure(c)
			}
		}, broker.SASLSSL)
		addrs[i] = a[broker.SASLSSL]
	}
	as = func(user string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, addrs[0], append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.DialTLSConfig(pki.clientTLS(t, false)),
			kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism())}, opts...)...)
	}
	return brokers, as
}
