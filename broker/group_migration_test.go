package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// Two kgo consumers of the classic protocol with the cooperative-sticky
// balancer (they keep partitions across a rebalance and revoke only what
// moves) see their live group upgraded when a consumer-protocol kgo member
// joins and downgraded when it leaves. No partition is ever assigned to a
// member while another still consumes it, no record is read below a
// commit, and every record is consumed exactly once.
func TestKgoCooperativeGroupUpgradesAndDowngrades(t *testing.T) {
	const topic, groupName, partitions, third = "coop-roll", "coop", 6, 150
	b := testenv.StartBroker(t, testenv.WithConfig(consumerGroups))
	createTopic(t, b.Addr, topic, partitions, nil)
	l := newLedger()
	coop := []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}
	a := startKgoMember(t, b.Addr, groupName, topic, "a", l, coop...)
	c := startKgoMember(t, b.Addr, groupName, topic, "c", l, coop...)
	adm := kadm.NewClient(newClient(t, b.Addr))
	groupType := func() string {
		listed, err := adm.ListGroups(context.Background())
		if err != nil {
			return err.Error()
		}
		return listed[groupName].GroupType
	}
	phase := func(step, want string, upTo int, members ...*kgoMember) {
		t.Helper()
		produceValues(t, b.Addr, topic, upTo-third, upTo)
		testenv.Eventuallyf(t, 30*time.Second, func() (bool, string) {
			for _, m := range members {
				if len(m.owned(l)) == 0 {
					return false, fmt.Sprintf("%s: %s owns nothing", step, m.name)
				}
			}
			got := groupType()
			return got == want && l.distinct() == upTo, fmt.Sprintf("%s: group type %q, want %q; %d of %d records", step, got, want, l.distinct(), upTo)
		})
	}
	phase("two classic members", "classic", third, a, c)
	n := startKgoMember(t, b.Addr, groupName, topic, "n", l, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	phase("upgraded by a consumer-protocol member", "consumer", 2*third, a, c, n)
	n.stop()
	<-n.done
	n.cl.Close() // commits and leaves: the group is classic again
	l.mu.Lock()
	for p, o := range l.owner {
		if o == "n" {
			delete(l.owner, p)
		}
	}
	l.mu.Unlock()
	phase("downgraded when it left", "classic", 3*third, a, c)

	l.mu.Lock()
	defer l.mu.Unlock()
	for v, k := range l.seen {
		if k != 1 {
			t.Errorf("record %s consumed %d times", v, k)
		}
	}
	for _, v := range l.violations {
		t.Error(v)
	}
}
