package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
)

// aclLeakSetup starts an authorizing broker with topics "public" (alice
// may read it in group "g") and "secret" (no ACL), both with offsets
// committed in group "g", and returns a client per user.
func aclLeakSetup(t *testing.T) (as func(user string, opts ...kgo.Opt) *kgo.Client, secretID [16]byte) {
	dir := t.TempDir()
	for _, u := range []string{"admin", "alice", "bob"} {
		setUser(t, dir, u, "SCRAM-SHA-512", u+"-secret")
	}
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.DataDir = dir
		c.Authorizer = true
		c.SuperUsers = []string{"User:admin"}
	}, broker.SASLPlaintext)
	as = func(user string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, addrs[broker.SASLPlaintext], append([]kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism()),
			kgo.RequestRetries(0), kgo.RetryTimeout(2 * time.Second)}, opts...)...)
	}
	ctx := context.Background()
	admin := kadm.NewClient(as("admin"))
	created, err := admin.CreateTopics(ctx, 1, 1, nil, "public", "secret")
	if err != nil || created["secret"].Err != nil || created["public"].Err != nil {
		t.Fatalf("creating topics: %v %+v", err, created)
	}
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("public").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead),
		kadm.NewACLs().Groups("g").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead),
	} {
		if res, err := admin.CreateACLs(ctx, b); err != nil || res[0].Err != nil {
			t.Fatalf("creating ACL: %v %+v", err, res)
		}
	}
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "public", Partition: 0, At: 3, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "secret", Partition: 0, At: 7, LeaderEpoch: -1})
	if res, err := admin.CommitOffsets(ctx, "g", offsets); err != nil || res.Error() != nil {
		t.Fatalf("committing offsets: %v %v", err, res.Error())
	}
	return as, created["secret"].ID
}

// Metadata by topic id answers a topic the caller may not Describe with
// TOPIC_AUTHORIZATION_FAILED and no name: before, the name was given.
func TestACLMetadataByTopicIDHidesTheName(t *testing.T) {
	as, secretID := aclLeakSetup(t)
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.TopicID = secretID
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), as("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 {
		t.Fatalf("%d topics answered, want 1", len(resp.Topics))
	}
	st := resp.Topics[0]
	if st.Topic != nil && *st.Topic != "" || st.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(st.Partitions) != 0 {
		t.Fatalf("Metadata by the id of a topic alice may not describe: name %q, error %d, %d partitions; want no name, TOPIC_AUTHORIZATION_FAILED, none",
			valueOrEmpty(st.Topic), st.ErrorCode, len(st.Partitions))
	}
}

func valueOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// OffsetFetch of a group one may read lists only the topics one may
// Describe, and a named topic one may not is TOPIC_AUTHORIZATION_FAILED
// without its offset: before, every committed topic and offset came back.
func TestACLOffsetFetchHidesTopicsOneMayNotDescribe(t *testing.T) {
	as, _ := aclLeakSetup(t)
	ctx := context.Background()
	adm := kadm.NewClient(as("alice"))
	all, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := all.Lookup("secret", 0); ok {
		t.Errorf("OffsetFetch of every topic lists secret: %+v", all)
	}
	if o, ok := all.Lookup("public", 0); !ok || o.At != 3 {
		t.Errorf("OffsetFetch of every topic: public = %+v, want offset 3", o)
	}
	for _, v := range []int16{7, 8} { // one group per request, and batched groups
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(v)
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "secret", []int32{0}
		req.Group, req.Topics = "g", []kmsg.OffsetFetchRequestTopic{rt}
		rg := kmsg.NewOffsetFetchRequestGroup()
		rgt := kmsg.NewOffsetFetchRequestGroupTopic()
		rgt.Topic, rgt.Partitions = "secret", []int32{0}
		rg.Group, rg.Topics = "g", []kmsg.OffsetFetchRequestGroupTopic{rgt}
		req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		versions := kversion.Stable()
		versions.SetMaxKeyVersion(req.Key(), v)
		resp, err := req.RequestWith(ctx, as("alice", kgo.MaxVersions(versions)))
		if err != nil {
			t.Fatal(err)
		}
		var code int16
		var offset int64 = -2
		if resp.Version != v {
			t.Fatalf("OffsetFetch sent as v%d, want v%d", resp.Version, v)
		}
		if len(resp.Groups) == 1 && len(resp.Groups[0].Topics) == 1 {
			p := resp.Groups[0].Topics[0].Partitions[0]
			code, offset = p.ErrorCode, p.Offset
		} else if len(resp.Topics) == 1 {
			p := resp.Topics[0].Partitions[0]
			code, offset = p.ErrorCode, p.Offset
		}
		if code != kerr.TopicAuthorizationFailed.Code || offset != -1 {
			t.Errorf("OffsetFetch v%d naming secret: error %d offset %d, want TOPIC_AUTHORIZATION_FAILED and -1", v, code, offset)
		}
	}
}

// Produce to a topic one may not write is TOPIC_AUTHORIZATION_FAILED
// whether or not the topic exists, and creates nothing: before, a missing
// topic answered UNKNOWN_TOPIC_OR_PARTITION, so refusals told which
// topics exist.
func TestACLProduceDoesNotProbeTopics(t *testing.T) {
	as, _ := aclLeakSetup(t)
	ctx := context.Background()
	bob := as("bob")
	for _, topic := range []string{"secret", "no-such-topic"} {
		req := produceRequest(9, -1, topic, 0, makeBatch(-1, -1, -1, "x"))
		resp, err := req.RequestWith(ctx, bob)
		if err != nil {
			t.Fatal(err)
		}
		if code := produceResult(resp).ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("bob producing to %s: error %d, want TOPIC_AUTHORIZATION_FAILED whether it exists or not", topic, code)
		}
	}
	topics, err := kadm.NewClient(as("admin")).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("no-such-topic") {
		t.Error("bob's refused produce created the topic")
	}
}
