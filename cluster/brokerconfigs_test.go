package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
)

func dialZK(t *testing.T, connect string) *cluster.ZKSession {
	t.Helper()
	s, err := cluster.DialZooKeeper(context.Background(), connect, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Concurrent updates from two sessions all land, a watcher in a third
// hears of them, and the node is where and as Kafka keeps it.
func TestZKBrokerConfigsUpdateAndWatch(t *testing.T) {
	connect := testenv.StartZooKeeper(t)
	a, b, w := dialZK(t, connect), dialZK(t, connect), dialZK(t, connect)

	seen := make(chan struct{}, 100)
	stop := make(chan struct{})
	defer close(stop)
	go cluster.NewZKBrokerConfigs(w).Watch(stop, func() { seen <- struct{}{} }, cluster.DefaultBrokerEntity, cluster.BrokerEntity(1))
	<-seen // armed

	var wg sync.WaitGroup
	for i, s := range []*cluster.ZKSession{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				_, err := cluster.NewZKBrokerConfigs(s).Update(cluster.DefaultBrokerEntity, func(m map[string]string) (map[string]string, error) {
					if m == nil {
						m = map[string]string{}
					}
					m[fmt.Sprintf("k%d-%d", i, j)] = "v"
					return m, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	got, err := cluster.NewZKBrokerConfigs(w).Load(cluster.DefaultBrokerEntity)
	if err != nil || len(got) != 20 {
		t.Fatalf("after 20 concurrent updates: %d keys %v, %v", len(got), got, err)
	}
	<-seen // at least one change reported

	p := w.Paths.BrokerConfigs(cluster.DefaultBrokerEntity)
	if !strings.HasSuffix(p, "/config/brokers/<default>") {
		t.Errorf("default node at %s, not where Kafka keeps it", p)
	}
	data, _, err := w.Conn.Get(p)
	if err != nil || !strings.HasPrefix(string(data), `{"version":1,"config":{`) {
		t.Errorf("node holds %q, %v", data, err)
	}
	if _, err := w.Conn.Create(w.Paths.BrokerConfigs("1"), []byte("junk"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.NewZKBrokerConfigs(w).Load("1"); err == nil || !strings.Contains(err.Error(), "/config/brokers/1") {
		t.Errorf("unreadable node: %v, want an error naming it", err)
	}
}
