package mirror_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// A renamed target topic gets the source topic's own configs when the
// mirror creates it, follows a change of them, and grows when the source
// topic grows, so that the new partitions are copied partition for
// partition, exactly once.
func TestMirrorCarriesTopicConfigsPartitionsAndRename(t *testing.T) {
	needServices(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sadm := kadm.NewClient(newClient(t, []string{src.Addr}))
	tadm := kadm.NewClient(newClient(t, []string{dst.Addr}, kgo.MetadataMinAge(10*time.Millisecond)))
	hour, gzip := "3600000", "gzip"
	if _, err := sadm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": &hour, "compression.type": &gzip}, "logs"); err != nil {
		t.Fatal(err)
	}
	produce(t, []string{src.Addr}, "dc1", "logs", 2, 0, 100)
	_, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{src.Addr}}}, Target: []string{dst.Addr},
		Rename: "{source}.{topic}", TopicSyncInterval: 300 * time.Millisecond})
	waitForCount(t, []string{dst.Addr}, "dc1.logs", 200, time.Minute)
	configs := func() map[string]string {
		out := map[string]string{}
		rcs, err := tadm.DescribeTopicConfigs(ctx, "dc1.logs")
		if err != nil {
			return out
		}
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				if c.Value != nil {
					out[c.Key] = *c.Value
				}
			}
		}
		return out
	}
	if c := configs(); c["retention.ms"] != hour || c["compression.type"] != gzip {
		t.Fatalf("target topic created with retention.ms=%s compression.type=%s, want the source's %s and %s", c["retention.ms"], c["compression.type"], hour, gzip)
	}

	twoHours := "7200000"
	if _, err := sadm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &twoHours}}, "logs"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventuallyf(t, time.Minute, func() (bool, string) {
		c := configs()
		return c["retention.ms"] == twoHours, fmt.Sprintf("target retention.ms=%s, want %s", c["retention.ms"], twoHours)
	})

	if _, err := sadm.UpdatePartitions(ctx, 4, "logs"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, []string{src.Addr}, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(4) {
		from := 100
		if p >= 2 {
			from = 0
		}
		for i := from; i < 200; i++ {
			cl.Produce(ctx, testRecord("dc1", "logs", p, i), nil)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitForCount(t, []string{dst.Addr}, "dc1.logs", 800, time.Minute)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkExactCopy(t, readTopic(t, []string{src.Addr}, "logs"), readTopic(t, []string{dst.Addr}, "dc1.logs"), "dc1", 0, 0)
}
