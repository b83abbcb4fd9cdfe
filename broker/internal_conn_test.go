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

	"github.com/tributary-io/tributary/broker"
)

// Under an authorizer with no ACLs, a client dialing in-process
// (DialInternal) may create, write and read _schemas, and nothing else:
// its principal is a super user for the internal topics only. Its
// only listener is SASL_PLAINTEXT, on which the pipe needs no login.
func TestDialInternalIsSuperUserForInternalTopicsOnly(t *testing.T) {
	b, addrs := startListeners(t, func(c *broker.Config) { c.Authorizer = true }, broker.SASLPlaintext)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs[broker.SASLPlaintext]), kgo.Dialer(b.DialInternal),
		kgo.ClientID(broker.RegistryClientID), kgo.RequestRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	retention := "-1"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &retention}, "_schemas"); err != nil {
		t.Fatalf("creating _schemas in-process: %v", err)
	}
	rec := &kgo.Record{Topic: "_schemas", Key: []byte("k"), Value: []byte("v")}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("writing _schemas in-process: %v", err)
	}
	offs, err := adm.ListEndOffsets(ctx, "_schemas")
	if err != nil || offs["_schemas"][0].Offset != 1 {
		t.Fatalf("end offset of _schemas in-process: %v %v, want 1", offs, err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "clicks"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("creating an ordinary topic in-process: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("describing ACLs in-process: %v, want CLUSTER_AUTHORIZATION_FAILED (the internal principal has no cluster rights)", err)
	}
}
