package loader_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// A run whose partitions' leader dies while it reads them follows the
// leadership to the replica the controller elects and loads every record
// exactly once: the loader fetches from leaders itself, so it must ask the
// metadata again when a leader stops answering.
func TestLeaderDiesMidRun(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper)
	_, brokers := testenv.StartCluster(t, 3)
	env := loadertest.StartOn(t, brokers[0])
	const topic = "moving"
	if _, err := env.Admin.CreateTopic(context.Background(), 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	var victim int32 // a leader other than broker 1, the registry's
	testenv.Eventually(t, 20*time.Second, "every partition has three in-sync replicas", func() bool {
		md, err := env.Admin.Metadata(context.Background(), topic)
		if err != nil || len(md.Topics[topic].Partitions) != 3 {
			return false
		}
		for _, p := range md.Topics[topic].Partitions {
			if p.Err != nil || len(p.ISR) != 3 || p.Leader < 0 {
				return false
			}
			if p.Leader != 1 {
				victim = p.Leader
			}
		}
		return true
	})
	if victim == 0 {
		t.Fatal("broker 1 leads every partition; the test needs another leader to stop")
	}
	from := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	events := loadertest.PageViews(0, 150_000, 3, from, time.Hour)
	env.Produce(t, topic, loadertest.Schema(t, "pageview"), events)

	url := "file://" + t.TempDir()
	cfg := config(env, url, topic)
	cfg.Brokers = nil
	for i, b := range brokers {
		if int32(i+1) != victim {
			cfg.Brokers = append(cfg.Brokers, b.Addr)
		}
	}
	var once sync.Once
	cfg.Fault = func(p loader.FaultPoint) error {
		if p == loader.FaultMidFetch {
			once.Do(brokers[victim-1].Stop) // after the first records came
		}
		return nil
	}
	sum := run(t, cfg)
	if sum.Records != int64(len(events)) || len(sum.Lost) != 0 {
		t.Fatalf("loaded %d records, lost %v; want all %d", sum.Records, sum.Lost, len(events))
	}
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, openWarehouse(t, url)), topic, events)
}
