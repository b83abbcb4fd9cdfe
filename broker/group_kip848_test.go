package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// consumerGroups is fastGroups with short consumer-protocol timings.
func consumerGroups(c *broker.Config) {
	fastGroups(c)
	c.Groups.ConsumerHeartbeatInterval = 200 * time.Millisecond
	c.Groups.ConsumerSessionTimeout = 3 * time.Second
}

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
