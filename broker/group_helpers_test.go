package broker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/internal/testenv"
)

// fastGroups keeps group tests fast: short session timeouts are allowed,
// new groups wait only briefly for more members, deadlines are checked often.
func fastGroups(c *broker.Config) {
	c.Groups = group.Config{
		MinSessionTimeout:     100 * time.Millisecond,
		InitialRebalanceDelay: 300 * time.Millisecond,
		Tick:                  20 * time.Millisecond,
	}
}

// startGroupBroker starts an in-process broker with fastGroups.
func startGroupBroker(t *testing.T, opts ...testenv.BrokerOption) *testenv.Broker {
	t.Helper()
	return testenv.StartBroker(t, append([]testenv.BrokerOption{testenv.WithConfig(fastGroups)}, opts...)...)
}

// produceValues writes values to topic round-robin over its partitions and
// waits for every acknowledgement.
func produceValues(t *testing.T, addr, topic string, from, to int) {
	t.Helper()
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf("v%06d", i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
	cl.Close()
}

// committed reads a group's committed offsets through the Kafka protocol.
func committed(t *testing.T, addr, groupName string) kadm.OffsetResponses {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, groupName)
	if err != nil {
		t.Fatalf("fetching offsets of %s: %v", groupName, err)
	}
	if err := resp.Error(); err != nil {
		t.Fatalf("fetching offsets of %s: %v", groupName, err)
	}
	return resp
}

// killSwitch is a dialer whose connections can all be cut at once, and
// which refuses new ones afterwards: to a broker, the client has crashed
// (no LeaveGroup, no more heartbeats).
type killSwitch struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (k *killSwitch) dial(ctx context.Context, network, host string) (net.Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed {
		return nil, errors.New("killed")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, host)
	if err == nil {
		k.conns = append(k.conns, c)
	}
	return c, err
}

func (k *killSwitch) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killed = true
	for _, c := range k.conns {
		c.Close()
	}
}
