package testenv

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CreateTopic creates topic with partitions through cl, failing the test on
// any error.
func CreateTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32) {
	t.Helper()
	resp, err := kadm.NewClient(cl).CreateTopics(context.Background(), partitions, 1, nil, topic)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp[topic]; r.Err != nil {
		t.Fatalf("creating topic %s: %v", topic, r.Err)
	}
}

// ProduceRange writes the values from..to-1 as decimal text, each keyed by
// its value, and waits until all are acknowledged.
func ProduceRange(t testing.TB, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		v := []byte(strconv.Itoa(i))
		recs = append(recs, &kgo.Record{Topic: topic, Key: v, Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
}

// NetLink is a network path a test can cut: Dial makes connections through
// it; Cut closes them and refuses new ones until Heal. Given as a dialer to
// a ZooKeeper or Kafka client, it makes that client lose contact on demand.
type NetLink struct {
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

// Dial connects unless the link is cut.
func (l *NetLink) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return nil, errors.New("test: link is cut")
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		l.conns = append(l.conns, c)
	}
	return c, err
}

// Cut closes every connection made through the link and refuses new ones.
func (l *NetLink) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// Heal lets new connections through again.
func (l *NetLink) Heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = false
}
