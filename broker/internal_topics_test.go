package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

func client(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.RecordRetries(3)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createSchemasTopic creates _schemas as the registry does: one partition,
// kept forever.
func createSchemasTopic(t *testing.T, adm *kadm.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "_schemas"); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) || r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		if err == nil {
			err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
		t.Fatalf("create _schemas with its own shape: %v", err)
	}
}

// An ordinary client's record on _schemas — a forged schema id 2^31-1 or
// a tombstone for a live version — is refused with a message that says
// why; the registry's client id is admitted.
func TestInternalTopicRefusesProduceFromOrdinaryClients(t *testing.T) {
	b := testenv.StartBroker(t)
	ordinary := client(t, b.Addr)
	createSchemasTopic(t, kadm.NewClient(ordinary))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	key := []byte(`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`)
	forged := []*kgo.Record{
		{Topic: "_schemas", Key: key, Value: []byte(`{"subject":"s","version":1,"id":2147483647,"schema":"\"string\"","deleted":false}`)},
		{Topic: "_schemas", Key: key}, // tombstone
		{Topic: "_audit", Value: []byte("not a monitoring event")},
	}
	for _, r := range forged {
		err := ordinary.ProduceSync(ctx, r).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("produce to %s from an ordinary client: %v, want TOPIC_AUTHORIZATION_FAILED", r.Topic, err)
		}
	}
	// kgo keeps only the code; the message is in the raw answer.
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "_schemas"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = broker.EncodeBatchForTest([]broker.InternalRecord{{Key: key}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, ordinary)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if msg := p.ErrorMessage; p.ErrorCode != kerr.TopicAuthorizationFailed.Code || msg == nil ||
		!strings.Contains(*msg, "internal to Tributary") || !strings.Contains(*msg, broker.RegistryClientID) {
		t.Fatalf("raw produce to _schemas: code %d message %v; want a refusal naming who may write", p.ErrorCode, msg)
	}

	registry := client(t, b.Addr, kgo.ClientID(broker.RegistryClientID))
	if err := registry.ProduceSync(ctx, forged[0]).FirstErr(); err != nil {
		t.Fatalf("produce to _schemas from the registry's client id: %v", err)
	}
}

func TestInternalTopicRefusesDelete(t *testing.T) {
	b := testenv.StartBroker(t)
	adm := kadm.NewClient(client(t, b.Addr))
	createSchemasTopic(t, adm)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopics(ctx, "_schemas")
	if err != nil {
		t.Fatal(err)
	}
	if got := resp["_schemas"].Err; !errors.Is(got, kerr.TopicAuthorizationFailed) {
		t.Fatalf("delete _schemas: %v, want TOPIC_AUTHORIZATION_FAILED", got)
	}
	topics, err := adm.ListTopics(ctx, "_schemas")
	if err != nil || topics["_schemas"].Err != nil {
		t.Fatalf("_schemas after a refused delete: %v %v", err, topics["_schemas"].Err)
	}
}

// _schemas may be created by anyone, but only with one partition and
// without retention: a second partition or a retention limit would lose
// the registry's state.
func TestInternalTopicCreateNeedsItsShape(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.DefaultPartitions = 3 }))
	adm := kadm.NewClient(client(t, b.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "_schemas"); !errors.Is(err, kerr.InvalidPartitions) {
		t.Fatalf("create _schemas with 2 partitions: %v, want INVALID_PARTITIONS", err)
	}
	week := "604800000"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &week}, "_schemas"); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("create _schemas with retention: %v, want INVALID_CONFIG", err)
	}
	// Auto-creation (Metadata for a missing topic) gives it its own shape,
	// not the broker's default of 3 partitions.
	cl := client(t, b.Addr)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "_schemas"}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to a missing _schemas: %v, want TOPIC_AUTHORIZATION_FAILED after auto-creation", err)
	}
	topics, err := adm.Metadata(ctx, "_schemas")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(topics.Topics["_schemas"].Partitions); n != 1 {
		t.Fatalf("auto-created _schemas has %d partitions, want 1", n)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "_schemas")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cfgs.On("_schemas", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" && c.MaybeValue() != "-1" {
			t.Fatalf("auto-created _schemas has retention.ms=%s, want -1", c.MaybeValue())
		}
		if c.Key == "cleanup.policy" && c.MaybeValue() != "compact" {
			t.Fatalf("auto-created _schemas has cleanup.policy=%s, want compact", c.MaybeValue())
		}
	}
}

// AppendInternal is the in-process write path: it needs no client id, and
// what it wrote is fetched like any record.
func TestAppendInternal(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.InternalClients = []string{} }))
	cl := client(t, b.Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"_schemas": {0: kgo.NewOffset().AtStart()}}))
	createSchemasTopic(t, kadm.NewClient(cl))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	last, err := b.AppendInternal(ctx, "_schemas", 0, []broker.InternalRecord{{Key: []byte("k1"), Value: []byte("v1")}, {Key: []byte("k2")}})
	if err != nil || last != 1 {
		t.Fatalf("AppendInternal: last %d, %v; want 1", last, err)
	}
	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+"="+string(r.Value)) })
	}
	if strings.Join(got, " ") != "k1=v1 k2=" {
		t.Fatalf("fetched %q", got)
	}
}
