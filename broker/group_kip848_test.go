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
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Two kgo consumers with the consumer group protocol (KIP-848,
// ServerSideBalancer) share a topic through the coordinator's assignor; no
// partition is ever handed to one while the other still consumes it; one
// leaves and the other takes its partitions over from its commits; every
// record is consumed exactly once. kadm lists the group as type
// "consumer" and describes it through ConsumerGroupDescribe.
func TestKgoConsumerProtocolShareAndTakeOver(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
		assignor string
	}{
		{"uniform", kgo.CooperativeStickyBalancer(), "uniform"},
		{"range", kgo.RangeBalancer(), "range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const partitions, half = 4, 400
			b := testenv.StartBroker(t, testenv.WithConfig(consumerGroups))
			createTopic(t, b.Addr, "kip848", partitions, nil)
			produceValues(t, b.Addr, "kip848", 0, half)

			l := newLedger()
			opts := []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(tc.balancer)}
			a := startKgoMember(t, b.Addr, "next-gen", "kip848", "a", l, opts...)
			c := startKgoMember(t, b.Addr, "next-gen", "kip848", "c", l, opts...)
			testenv.Eventually(t, 30*time.Second, "two members owning two partitions each", func() bool {
				return len(a.owned(l)) == partitions/2 && len(c.owned(l)) == partitions/2
			})
			testenv.Eventually(t, 30*time.Second, "the first half consumed", func() bool { return l.distinct() == half })

			adm := kadm.NewClient(newClient(t, b.Addr))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			listed, err := adm.ListGroups(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if lg, ok := listed["next-gen"]; !ok || lg.ProtocolType != "consumer" {
				t.Errorf("ListGroups: %+v, want next-gen of protocol type consumer", listed)
			}
			described, err := adm.DescribeConsumerGroups(ctx, "next-gen")
			if err != nil {
				t.Fatal(err)
			}
			d := described["next-gen"]
			if d.Err != nil || d.AssignorName != tc.assignor || len(d.Members) != 2 {
				t.Errorf("ConsumerGroupDescribe: err %v, assignor %q, %d members; want %s and 2", d.Err, d.AssignorName, len(d.Members), tc.assignor)
			}

			if got := sum(gather(t, b), "tributary_group_members", map[string]string{"group": "next-gen"}); got != 2 {
				t.Errorf("tributary_group_members of the consumer-protocol group: %v, want 2", got)
			}

			// a leaves (its client closes: commit, then epoch -1).
			a.stop()
			<-a.done
			a.cl.Close()
			l.mu.Lock()
			for p, o := range l.owner {
				if o == "a" {
					delete(l.owner, p)
				}
			}
			l.mu.Unlock()
			testenv.Eventually(t, 15*time.Second, "c owning every partition", func() bool { return len(c.owned(l)) == partitions })
			produceValues(t, b.Addr, "kip848", half, 2*half)
			testenv.Eventually(t, 30*time.Second, "every record consumed", func() bool { return l.distinct() == 2*half })

			l.mu.Lock()
			for v, n := range l.seen {
				if n != 1 {
					t.Errorf("record %s consumed %d times", v, n)
				}
			}
			for _, v := range l.violations {
				t.Error(v)
			}
			l.mu.Unlock()
			c.stop()
			<-c.done
			c.cl.Close()
			offs := committed(t, b.Addr, "next-gen")
			for p := int32(0); p < partitions; p++ {
				if o, ok := offs.Lookup("kip848", p); !ok || o.At != 2*half/partitions {
					t.Errorf("partition %d committed at %v, want %d", p, o.At, 2*half/partitions)
				}
			}
		})
	}
}

// Heartbeats no honest client sends, over the wire: each gets its error
// with a reason, and the broker keeps serving the group's real members.
func TestConsumerGroupHeartbeatHostile(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(consumerGroups))
	createTopic(t, b.Addr, "hostile", 2, nil)
	cl := newClient(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	send := func(edit func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "hostile-g", "honest-member-id-0000000", 30000
		req.SubscribedTopicNames, req.Topics = []string{"hostile"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		edit(req)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	joined := send(func(*kmsg.ConsumerGroupHeartbeatRequest) {})
	if joined.ErrorCode != 0 || joined.Assignment == nil || len(joined.Assignment.Topics) != 1 || len(joined.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("join: %+v", joined)
	}
	huge := make([]string, 10001)
	for i := range huge {
		huge[i] = fmt.Sprintf("topic-%d", i)
	}
	for _, tc := range []struct {
		name string
		edit func(*kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "stranger", 7 }, kerr.UnknownMemberID},
		{"huge subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.SubscribedTopicNames = "other", huge }, kerr.InvalidRequest},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberID, r.SubscribedTopicRegex = "other", kmsg.StringPtr("[")
		}, kerr.InvalidRegularExpression},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberID, r.ServerAssignor = "other", kmsg.StringPtr("sticky")
		}, kerr.UnsupportedAssignor},
		{"lying epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = joined.MemberEpoch + 1000 }, kerr.FencedMemberEpoch},
	} {
		resp := send(tc.edit)
		if resp.ErrorCode != tc.want.Code || resp.ErrorMessage == nil || *resp.ErrorMessage == "" {
			t.Errorf("%s: %v %v, want %s with a reason", tc.name, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, tc.want.Message)
		} else {
			t.Logf("%s: %s: %s", tc.name, tc.want.Message, *resp.ErrorMessage)
		}
	}
	// The lying heartbeat fenced the member; it rejoins and is served.
	if again := send(func(*kmsg.ConsumerGroupHeartbeatRequest) {}); again.ErrorCode != 0 || again.Assignment == nil {
		t.Fatalf("rejoin after the fence: %+v", again)
	}
}

// A kgo consumer subscribed by regex sends it to the coordinator
// (ConsumerGroupHeartbeat v1 SubscribedTopicRegex), which resolves it: the
// member reads the matching topics only, a matching topic created later
// joins its assignment, and ConsumerGroupDescribe shows the regex.
func TestKgoConsumerProtocolRegex(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(consumerGroups))
	for _, topic := range []string{"rx-a", "other"} {
		createTopic(t, b.Addr, topic, 1, nil)
	}
	produceValues(t, b.Addr, "rx-a", 0, 10)
	produceValues(t, b.Addr, "other", 100, 110)
	cl := newClient(t, b.Addr, kgo.ConsumerGroup("kgo-regex"), kgo.ConsumeRegex(), kgo.ConsumeTopics("rx-.*"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(100*time.Millisecond))
	got := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	poll := func(want int) {
		for len(got) < want && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)] = r.Topic })
		}
	}
	poll(10)
	createTopic(t, b.Addr, "rx-b", 1, nil)
	produceValues(t, b.Addr, "rx-b", 10, 20)
	poll(20)
	for v, topic := range got {
		if !strings.HasPrefix(topic, "rx-") {
			t.Errorf("record %s of %s consumed; the regex does not match it", v, topic)
		}
	}
	if len(got) != 20 {
		t.Errorf("%d records consumed, want the 20 of rx-a and rx-b", len(got))
	}
	described, err := kadm.NewClient(newClient(t, b.Addr)).DescribeConsumerGroups(ctx, "kgo-regex")
	if err != nil {
		t.Fatal(err)
	}
	if ms := described["kgo-regex"].Members; len(ms) != 1 || ms[0].SubscribedTopicRegex == nil || !strings.Contains(*ms[0].SubscribedTopicRegex, "rx-.*") {
		t.Errorf("ConsumerGroupDescribe members: %+v, want one subscribed to a regex of rx-.* (kgo wraps it for Kafka's whole-name match)", ms)
	}
}

// Consumer-protocol membership lives in memory: after a broker restart the
// members get UNKNOWN_MEMBER_ID, rejoin and resume from their commits, and
// every record is consumed, none twice.
func TestKgoConsumerProtocolSurvivesRestart(t *testing.T) {
	const partitions, half = 2, 200
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithConfig(consumerGroups), testenv.WithDataDir(dir))
	addr := b.Addr
	createTopic(t, addr, "kip848-restart", partitions, nil)
	produceValues(t, addr, "kip848-restart", 0, half)
	l := newLedger()
	startKgoMember(t, addr, "restart-848", "kip848-restart", "m", l,
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	testenv.Eventually(t, 30*time.Second, "the first half consumed", func() bool { return l.distinct() == half })
	// Let an auto-commit cover everything before the restart.
	testenv.Eventually(t, 10*time.Second, "the first half committed", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.committed[0]+l.committed[1] == half
	})
	b.Stop()
	testenv.StartBroker(t, testenv.WithConfig(consumerGroups), testenv.WithDataDir(dir), testenv.WithAddr(addr))
	produceValues(t, addr, "kip848-restart", half, 2*half)
	testenv.Eventually(t, 60*time.Second, "every record consumed after the restart", func() bool { return l.distinct() == 2*half })
	l.mu.Lock()
	defer l.mu.Unlock()
	for v, n := range l.seen {
		if n != 1 {
			t.Errorf("record %s consumed %d times", v, n)
		}
	}
	for _, v := range l.violations {
		t.Error(v)
	}
}

// With --group-consumer-migration-policy=disabled, a group is classic or
// consumer while it has members: a classic JoinGroup into a live
// consumer-protocol group gets INCONSISTENT_GROUP_PROTOCOL, a consumer
// heartbeat into a live classic group GROUP_ID_NOT_FOUND with the reason.
// Once the classic members left, the consumer protocol takes the group and
// resumes from the offsets they committed.
func TestConsumerProtocolAndClassicDoNotMix(t *testing.T) {
	const partitions, half = 2, 100
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) {
		consumerGroups(c)
		c.Groups.MigrationPolicy = group.MigrationDisabled
	}))
	createTopic(t, b.Addr, "mix", partitions, nil)
	produceValues(t, b.Addr, "mix", 0, half)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw := newClient(t, b.Addr)

	l := newLedger()
	classic := startKgoMember(t, b.Addr, "mixed", "mix", "classic", l)
	testenv.Eventually(t, 30*time.Second, "the classic member consuming everything", func() bool { return l.distinct() == half })
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = "mixed", "newcomer-000000000000000", 30000, []string{"mix"}
	resp, err := hb.RequestWith(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.GroupIDNotFound.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "classic") {
		t.Fatalf("consumer heartbeat into a live classic group: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	classic.stop()
	<-classic.done
	classic.cl.Close() // commits and leaves

	next := newLedger()
	startKgoMember(t, b.Addr, "mixed", "mix", "next", next, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	produceValues(t, b.Addr, "mix", half, 2*half)
	testenv.Eventually(t, 30*time.Second, "the consumer-protocol member reading the second half", func() bool { return next.distinct() == half })
	next.mu.Lock()
	for v := range next.seen {
		if l.seen[v] > 0 {
			t.Errorf("record %s consumed again: the classic members' commits were not used", v)
		}
	}
	next.mu.Unlock()

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "mixed", 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	jresp, err := join.RequestWith(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if jresp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic JoinGroup into a live consumer-protocol group: %v", kerr.ErrorForCode(jresp.ErrorCode))
	}
}

// Under --authorizer, ConsumerGroupHeartbeat needs Read on the group and
// ConsumerGroupDescribe Describe on it (which Read implies), as in Kafka.
func TestConsumerProtocolACLs(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"admin", "alice"} {
		setUser(t, dir, u, "SCRAM-SHA-512", u+"-secret")
	}
	_, addrs := startListeners(t, func(c *broker.Config) {
		c.DataDir, c.Authorizer, c.SuperUsers = dir, true, []string{"User:admin"}
		consumerGroups(c)
	}, broker.SASLPlaintext)
	addr := addrs[broker.SASLPlaintext]
	as := func(user string) *kgo.Client {
		return newClient(t, addr, kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism()), kgo.RequestRetries(0))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := kadm.NewClient(as("admin"))
	if _, err := admin.CreateTopics(ctx, 1, 1, nil, "acl-848"); err != nil {
		t.Fatal(err)
	}
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Groups("readers").Operations(kadm.OpRead).Allow("User:alice").AllowHosts("*"))
	if err == nil {
		for _, r := range res {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	alice := as("alice")
	heartbeat := func(g string) int16 {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.SubscribedTopicNames = g, "alice-member-000000000000", 30000, []string{"acl-848"}
		resp, err := req.RequestWith(ctx, alice)
		var kerrv *kerr.Error
		switch {
		case errors.As(err, &kerrv): // kgo's FindCoordinator was refused first
			return kerrv.Code
		case err != nil:
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	// The coordinator itself checks too, whatever FindCoordinator said.
	direct := func(g string) int16 {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.SubscribedTopicNames = g, "alice-member-000000000000", 30000, []string{"acl-848"}
		resp, err := req.RequestWith(ctx, alice.Broker(0))
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := heartbeat("readers"); code != 0 {
		t.Errorf("alice joining readers: %v", kerr.ErrorForCode(code))
	}
	if code := heartbeat("writers"); code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alice joining writers: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if code := direct("writers"); code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alice's heartbeat for writers sent to the broker directly: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	describe := kmsg.NewPtrConsumerGroupDescribeRequest()
	describe.Groups = []string{"readers", "writers"}
	resp, err := describe.RequestWith(ctx, alice.Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 1 {
		t.Errorf("alice describing readers (Read implies Describe): %v, %d members", kerr.ErrorForCode(g.ErrorCode), len(g.Members))
	}
	if code := resp.Groups[1].ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alice describing writers: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
}
