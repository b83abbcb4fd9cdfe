package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
)

// TestACLMatrix: with the authorizer on, a principal may do exactly what
// its ACLs allow. alice may write "orders" and read topics prefixed "logs-"
// in group "readers", but a deny on "logs-secret" beats the prefix allow;
// bob has no ACL and sees no topic; the super user admin manages ACLs,
// which apply to the next request.
func TestACLMatrix(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"admin", "alice", "bob"} {
		setUser(t, dir, u, "SCRAM-SHA-512", u+"-secret")
	}
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.DataDir = dir
		c.Authorizer = true
		c.SuperUsers = []string{"User:admin"}
	}, broker.SASLPlaintext)
	addr := addrs[broker.SASLPlaintext]
	as := func(user string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, addr, append([]kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism()),
			kgo.RequestRetries(0), kgo.RetryTimeout(2 * time.Second)}, opts...)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admin := kadm.NewClient(as("admin"))
	if _, err := admin.CreateTopics(ctx, 1, 1, nil, "orders", "other", "logs-app", "logs-secret"); err != nil {
		t.Fatal(err)
	}
	allow := func(b *kadm.ACLBuilder) *kadm.ACLBuilder { return b.Allow("User:alice").AllowHosts("*") }
	for _, b := range []*kadm.ACLBuilder{
		allow(kadm.NewACLs().Topics("orders").Operations(kadm.OpWrite)),
		allow(kadm.NewACLs().Topics("logs-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead)),
		allow(kadm.NewACLs().Groups("readers").Operations(kadm.OpRead)),
		kadm.NewACLs().Topics("logs-secret").Deny("User:alice").DenyHosts("*").Operations(kadm.OpRead),
	} {
		res, err := admin.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("creating ACL: %v", r.Err)
			}
		}
	}
	for _, topic := range []string{"logs-app", "logs-secret"} {
		if err := as("admin").ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("super user producing to %s: %v", topic, err)
		}
	}

	produce := func(user, topic string) error {
		return as(user).ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}
	consume := func(user, topic string) error {
		cl := as(user, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for {
			fs := cl.PollFetches(pctx)
			if err := fs.Err(); err != nil {
				return err
			}
			if fs.NumRecords() > 0 {
				return nil
			}
		}
	}
	commit := func(user, group string) error {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "logs-app", Partition: 0, At: 1})
		resp, err := kadm.NewClient(as(user)).CommitOffsets(ctx, group, offs)
		if err != nil {
			return err
		}
		return resp.Error()
	}
	for _, c := range []struct {
		what string
		err  error
		want error
	}{
		{"alice writes orders", produce("alice", "orders"), nil},
		{"alice writes other", produce("alice", "other"), kerr.TopicAuthorizationFailed},
		{"alice reads logs-app (prefix)", consume("alice", "logs-app"), nil},
		{"alice reads logs-secret (deny beats allow)", consume("alice", "logs-secret"), kerr.TopicAuthorizationFailed},
		{"alice commits in readers", commit("alice", "readers"), nil},
		{"alice commits in writers", commit("alice", "writers"), kerr.GroupAuthorizationFailed},
		{"bob writes orders", produce("bob", "orders"), kerr.TopicAuthorizationFailed},
	} {
		if (c.want == nil) != (c.err == nil) || (c.want != nil && !errors.Is(c.err, c.want)) {
			t.Errorf("%s: got %v, want %v", c.what, c.err, c.want)
		}
	}

	// A Produce to an unknown topic creates it only for a principal that
	// may Create it.
	produceReq := kmsg.NewPtrProduceRequest()
	produceReq.Acks, produceReq.TimeoutMillis = 1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "alice-new"
	pp := kmsg.NewProduceRequestTopicPartition()
	pt.Partitions = append(pt.Partitions, pp)
	produceReq.Topics = append(produceReq.Topics, pt)
	if resp, err := produceReq.RequestWith(ctx, as("alice")); err != nil || resp.Topics[0].Partitions[0].ErrorCode == 0 {
		t.Errorf("alice producing to a topic she may not create: %+v, %v; want an error", resp, err)
	}
	if all, err := admin.ListTopics(ctx); err != nil || all.Has("alice-new") {
		t.Errorf("a Produce without Create made topic alice-new (%v)", err)
	}

	// The admin APIs are checked too: alice may write orders but not alter
	// its configs, grow it, delete its records or describe the log dirs.
	aliceAdm := kadm.NewClient(as("alice"))
	v := "1000"
	if rs, err := aliceAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &v}}, "orders"); err != nil || len(rs) != 1 || !errors.Is(rs[0].Err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice altering orders' configs: %+v %v; want TOPIC_AUTHORIZATION_FAILED", rs, err)
	}
	if rs, err := aliceAdm.CreatePartitions(ctx, 2, "orders"); err != nil || !errors.Is(rs["orders"].Err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice adding partitions to orders: %+v %v; want TOPIC_AUTHORIZATION_FAILED", rs, err)
	}
	recs := kadm.Offsets{}
	recs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1})
	if rs, err := aliceAdm.DeleteRecords(ctx, recs); err != nil || !errors.Is(rs.Error(), kerr.TopicAuthorizationFailed) {
		t.Errorf("alice deleting records of orders: %v %v; want TOPIC_AUTHORIZATION_FAILED", rs.Error(), err)
	}
	meta, err := admin.BrokerMetadata(ctx)
	if err != nil || len(meta.Brokers) == 0 {
		t.Fatalf("broker metadata: %+v %v", meta, err)
	}
	// Sent to one broker: a client-side merge of all brokers' answers
	// would drop the top-level error code.
	logDirs, err := as("alice").Broker(int(meta.Brokers[0].NodeID)).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
	if err != nil || logDirs.(*kmsg.DescribeLogDirsResponse).ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice describing log dirs: %+v %v; want CLUSTER_AUTHORIZATION_FAILED", logDirs, err)
	}

	topics, err := kadm.NewClient(as("bob")).ListTopics(ctx)
	if err != nil || len(topics) != 0 {
		t.Errorf("bob, without ACLs, listed topics %v (%v); want none", topics.Names(), err)
	}
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if resp, err := describe.RequestWith(ctx, as("alice")); err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice describing ACLs: got %+v, %v; want CLUSTER_AUTHORIZATION_FAILED", resp, err)
	}
	if resp, err := describe.RequestWith(ctx, as("admin")); err != nil || resp.ErrorCode != 0 || len(resp.Resources) != 4 {
		t.Errorf("admin describing ACLs: got %+v, %v; want the 4 resources with ACLs", resp, err)
	}

	// Deleting alice's Write applies to her next request.
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	name, principal := "orders", "User:alice"
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeLiteral
	f.Principal, f.Operation, f.PermissionType = &principal, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	dresp, err := del.RequestWith(ctx, as("admin"))
	if err != nil || dresp.Results[0].ErrorCode != 0 || len(dresp.Results[0].MatchingACLs) != 1 {
		t.Fatalf("deleting alice's ACL on orders: %+v %v", dresp, err)
	}
	if err := produce("alice", "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice writes orders after her ACL was deleted: got %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}
