package compat_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// saramaHandler records what one sarama group member consumed.
type saramaHandler struct {
	mu     sync.Mutex
	seen   map[string]bool
	claims map[int32]bool // partitions of its latest session
}

func (h *saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.claims = map[int32]bool{}
	for _, ps := range s.Claims() {
		for _, p := range ps {
			h.claims[p] = true
		}
	}
	return nil
}

func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		h.mu.Lock()
		h.seen[string(msg.Value)] = true
		h.mu.Unlock()
		s.MarkMessage(msg, "")
	}
	return nil
}

func startSarama(t *testing.T, addr, groupName, topic string, version sarama.KafkaVersion, strategy sarama.BalanceStrategy, h *saramaHandler) func() {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "sarama-test"
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	cfg.Consumer.Group.Session.Timeout = 2 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{addr}, groupName, cfg)
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				t.Errorf("sarama consume: %v", err)
				return
			}
		}
	}()
	stop := func() {
		cancel()
		<-done
		if err := cg.Close(); err != nil {
			t.Errorf("closing sarama group: %v", err)
		}
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(stop) })
	return func() { once.Do(stop) }
}

// TestSaramaGroup runs two sarama members with each of sarama's eager
// balancers (at an old and a recent protocol version): together they
// consume everything, each gets partitions, the group reports the balancer
// as its protocol, and leaving commits everything.
func TestSaramaGroup(t *testing.T) {
	cases := []struct {
		name     string
		version  sarama.KafkaVersion
		strategy sarama.BalanceStrategy
	}{
		{"range", sarama.V2_1_0_0, sarama.NewBalanceStrategyRange()},
		{"roundrobin", sarama.V3_6_0_0, sarama.NewBalanceStrategyRoundRobin()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const partitions, n = 6, 600
			b := brokertest.StartGroupBroker(t)
			brokertest.CreateTopic(t, b.Addr, "views", partitions, nil)
			brokertest.ProduceValues(t, b.Addr, "views", 0, n)

			hs := []*saramaHandler{{seen: map[string]bool{}}, {seen: map[string]bool{}}}
			var stops []func()
			for _, h := range hs {
				stops = append(stops, startSarama(t, b.Addr, "sarama-"+tc.name, "views", tc.version, tc.strategy, h))
			}
			testenv.Eventually(t, 30*time.Second, "both members holding partitions and everything consumed", func() bool {
				all := map[string]bool{}
				for _, h := range hs {
					h.mu.Lock()
					claims := len(h.claims)
					for v := range h.seen {
						all[v] = true
					}
					h.mu.Unlock()
					if claims != partitions/2 {
						return false
					}
				}
				return len(all) == n
			})

			adm := kadm.NewClient(brokertest.NewClient(t, b.Addr))
			described, err := adm.DescribeGroups(context.Background(), "sarama-"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			g := described["sarama-"+tc.name]
			if g.Err != nil || g.State != "Stable" || g.Protocol != tc.name || len(g.Members) != 2 {
				t.Fatalf("group described as %+v (err %v)", g, g.Err)
			}

			for _, stop := range stops {
				stop()
			}
			offs := brokertest.Committed(t, b.Addr, "sarama-"+tc.name)
			for p := int32(0); p < partitions; p++ {
				if o, _ := offs.Lookup("views", p); o.At != n/partitions {
					t.Errorf("partition %d committed at %d, want %d", p, o.At, n/partitions)
				}
			}
		})
	}
}
