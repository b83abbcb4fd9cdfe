package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestClusterSCRAMUsersInZooKeeper: two brokers with a PLAINTEXT and a
// SASL_PLAINTEXT listener each. A user created with AlterUserScramCredentials
// through broker 1 logs in at broker 2 at once (ZooKeeper /config/users);
// Metadata on the SASL listener lists both brokers by their SASL ports (the
// registry records every endpoint); after deletion the login is refused.
func TestClusterSCRAMUsersInZooKeeper(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	addrs := make([]map[broker.SecurityProtocol]string, 2)
	for i := range addrs {
		_, addrs[i] = startMember(t, func(c *broker.Config, eps []cluster.Endpoint) {
			self := broker.SelfWithEndpoints(cluster.Broker{ID: int32(i + 1)}, eps)
			meta, err := cluster.JoinZooKeeper(context.Background(), connect, self, testenv.Logger(t, 0))
			if err != nil {
				t.Fatal(err)
			}
			c.Metadata = meta
		}, broker.Plaintext, broker.SASLPlaintext)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plainClient := newClient(t, addrs[0][broker.Plaintext])
	adm := kadm.NewClient(plainClient)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "erin", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "erin-secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := altered["erin"].Err; err != nil {
		t.Fatalf("creating erin: %v", err)
	}
	// kadm checks iterations itself; the broker must too.
	weak := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "weak", 1, 1000, []byte("salt"), make([]byte, 32)
	weak.Upsertions = append(weak.Upsertions, up)
	wresp, err := weak.RequestWith(ctx, plainClient)
	if err != nil {
		t.Fatal(err)
	}
	if code := wresp.Results[0].ErrorCode; code != kerr.UnacceptableCredential.Code {
		t.Fatalf("1000 iterations: got error code %d, want UNACCEPTABLE_CREDENTIAL", code)
	}
	described, err := adm.DescribeUserSCRAMs(ctx, "erin")
	if err != nil || described["erin"].Err != nil || len(described["erin"].CredInfos) != 1 ||
		described["erin"].CredInfos[0].Iterations != 4096 {
		t.Fatalf("describing erin: %+v %v", described, err)
	}

	erin := kgo.SASL(scram.Auth{User: "erin", Pass: "erin-secret"}.AsSha256Mechanism())
	roundTrip(t, addrs[1][broker.SASLPlaintext], "erin-topic", 10, erin)

	md, err := kadm.NewClient(newClient(t, addrs[1][broker.SASLPlaintext], erin)).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, b := range md.Brokers {
		got[fmt.Sprintf("%s:%d", b.Host, b.Port)] = true
	}
	if len(got) != 2 || !got[addrs[0][broker.SASLPlaintext]] || !got[addrs[1][broker.SASLPlaintext]] {
		t.Fatalf("SASL client was given brokers %v, want both SASL listeners %s, %s",
			got, addrs[0][broker.SASLPlaintext], addrs[1][broker.SASLPlaintext])
	}

	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "erin", Mechanism: kadm.ScramSha256}}, nil); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addrs[1][broker.SASLPlaintext], erin, kgo.RequestRetries(0))
	if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("login after deletion: got %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestClusterACLsApplyOnEveryBroker: an ACL created through broker 1 is
// stored in ZooKeeper and enforced by broker 2 once its watch fires.
func TestClusterACLsApplyOnEveryBroker(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	zs, err := cluster.DialZooKeeper(ctx, connect, testenv.Logger(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer zs.Close()
	users := broker.NewZooKeeperCredentials(zs)
	for _, u := range []string{"admin", "frank"} {
		cred, err := broker.NewSCRAMCredential("SCRAM-SHA-256", u, u+"-secret", broker.DefaultSCRAMIterations)
		if err != nil {
			t.Fatal(err)
		}
		if err := users.Put(u, "SCRAM-SHA-256", cred); err != nil {
			t.Fatal(err)
		}
	}
	addrs := make([]string, 2)
	for i := range addrs {
		_, a := startMember(t, func(c *broker.Config, eps []cluster.Endpoint) {
			self := broker.SelfWithEndpoints(cluster.Broker{ID: int32(i + 1)}, eps)
			meta, err := cluster.JoinZooKeeper(context.Background(), connect, self, testenv.Logger(t, 0))
			if err != nil {
				t.Fatal(err)
			}
			c.Metadata, c.Authorizer, c.SuperUsers = meta, true, []string{"User:admin"}
		}, broker.SASLPlaintext)
		addrs[i] = a[broker.SASLPlaintext]
	}
	as := func(user, addr string) *kgo.Client {
		return newClient(t, addr, kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism()),
			kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	}
	if _, err := kadm.NewClient(as("admin", addrs[0])).CreateTopics(ctx, 1, 1, nil, "audited"); err != nil {
		t.Fatal(err)
	}
	describe := func() error {
		resp, err := kadm.NewClient(as("frank", addrs[1])).ListTopics(ctx, "audited")
		if err != nil {
			return err
		}
		return resp["audited"].Err
	}
	if err := describe(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("frank without ACLs: got %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	res, err := kadm.NewClient(as("admin", addrs[0])).CreateACLs(ctx,
		kadm.NewACLs().Topics("audited").Allow("User:frank").AllowHosts("*").Operations(kadm.OpDescribe))
	if err != nil || res[0].Err != nil {
		t.Fatalf("creating the ACL through broker 1: %v %v", err, res)
	}
	testenv.Eventually(t, 30*time.Second, "broker 2 admits frank after the ACL was created through broker 1", func() bool {
		return describe() == nil
	})
}
