package broker_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
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

// An in-process client made before its broker serves (as the standalone
// registry's is) waits for the listeners instead of failing its first
// requests; after Close, dialing fails at once.
func TestDialInternalWaitsForTheBrokerToServe(t *testing.T) {
	b, err := broker.New(broker.Config{DataDir: t.TempDir(), Logger: testenv.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dialed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := b.DialInternal(ctx, "tcp", "anywhere:9092")
		if err == nil {
			c.Close()
		}
		dialed <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the dial start before the broker serves
	served := make(chan error, 1)
	go func() {
		served <- b.ServeListeners([]broker.Listener{{Protocol: broker.Plaintext, Addr: ln.Addr().String()}}, []net.Listener{ln})
	}()
	if err := <-dialed; err != nil {
		t.Fatalf("dialing in-process while the broker starts: %v, want a connection once it serves", err)
	}
	b.Close()
	<-served
	if _, err := b.DialInternal(context.Background(), "tcp", "anywhere:9092"); err == nil {
		t.Fatal("dialing in-process after Close succeeded")
	}
}
