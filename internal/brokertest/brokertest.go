// Package brokertest is what the broker's own tests and the tests of
// third-party clients (tests/compat) share: kgo clients and admin clients
// that close at cleanup, topics, records produced and read back, group
// settings that keep group tests fast, and in-process brokers serving
// several listeners. It is ordinary (non-test) code so that tests of
// several packages can import it; only tests do.
//
// Everything here goes through the broker's public API (broker.New,
// broker.Config, the Kafka protocol): a test that needs the broker's
// internals stays in package broker.
//
// Each helper fails the test on any error, so a test reads as the steps
// it takes.
package brokertest

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// NewClient is a kgo client seeded with addr, closed at the end of the
// test.
func NewClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// NewAdmin is an admin client of addr and the kgo client under it.
func NewAdmin(t testing.TB, addr string) (*kadm.Client, *kgo.Client) {
	t.Helper()
	cl := NewClient(t, addr)
	return kadm.NewClient(cl), cl
}

// CreateTopic creates topic with partitions of one replica and the topic
// configs given (nil for none).
func CreateTopic(t testing.TB, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(NewClient(t, addr))
	resp, err := adm.CreateTopic(context.Background(), partitions, 1, configs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("creating topic %s: %v %v %s", topic, err, resp.Err, resp.ErrMessage)
	}
}

// ConfigsByName indexes the configs DescribeConfigs reported for the
// resource name.
func ConfigsByName(t testing.TB, rcs kadm.ResourceConfigs, name string) map[string]kadm.Config {
	t.Helper()
	rc, err := rcs.On(name, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("configs of %s: %v %v", name, err, rc.Err)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}
