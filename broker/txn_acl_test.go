package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
)

// With the authorizer on, a transactional producer needs Write on its
// transactional id as Kafka checks it: without it InitProducerId is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; with Write on the id's prefix
// and on the topic it commits; Describe on the id lets kafka-transactions
// describe it, and a principal without it is refused.
func TestTransactionalIDACLs(t *testing.T) {
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
			kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := kadm.NewClient(as("admin"))
	if _, err := admin.CreateTopics(ctx, 1, 1, nil, "acl-txn"); err != nil {
		t.Fatal(err)
	}
	grant := func(b *kadm.ACLBuilder) {
		t.Helper()
		res, err := admin.CreateACLs(ctx, b)
		if err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	grant(kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("acl-txn").Operations(kadm.OpWrite))

	produce := func() error {
		cl := as("alice", kgo.TransactionalID("app-1"), kgo.DefaultProduceTopic("acl-txn"))
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			return err
		}
		return cl.EndTransaction(ctx, kgo.TryCommit)
	}
	if err := produce(); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("without an ACL on the transactional id: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	grant(kadm.NewACLs().Allow("User:alice").AllowHosts("*").TransactionalIDs("app-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
	if err := produce(); err != nil {
		t.Fatalf("with Write on the id's prefix: %v", err)
	}
	d, err := kadm.NewClient(as("alice")).DescribeTransactions(ctx, "app-1")
	if err != nil || d["app-1"].Err != nil || d["app-1"].State != "CompleteCommit" {
		t.Fatalf("alice describing her transaction (Write implies Describe): %+v %v", d, err)
	}
	d, err = kadm.NewClient(as("bob")).DescribeTransactions(ctx, "app-1")
	if err == nil && !errors.Is(d["app-1"].Err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("bob describing alice's transaction: %+v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", d)
	}
}
