package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestRequestNamingMorePartitionsThanDescriptorsClosesNoLog: a broker
// whose descriptor budget keeps the files of 50 logs open, answering
// produces naming 300 partitions, parks the logs it pushes out (their
// descriptors given back, the logs still open) instead of closing and
// reopening them. Before, each request closed about 250 logs (a flush, a
// checkpoint, a producer snapshot and a clean-shutdown marker each) and
// reopened as many: more than ten fsyncs per partition. Now a request
// costs its partitions' flushes, and the process holds the budget's
// descriptors on the data directory once the releases are done.
func TestRequestNamingMorePartitionsThanDescriptorsClosesNoLog(t *testing.T) {
	dir := t.TempDir()
	disk := &slowDisk{delay: time.Millisecond}
	const budget = 150
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.MaxPartitionFiles = budget // 50 logs of one segment
		c.Log.FS = disk
	}))
	const topics, parts = 60, 5
	names := createNumberedTopics(t, b.Addr, "park", topics, parts)
	cl := manualPartitionClient(t, b.Addr)
	for round := 1; round <= 3; round++ {
		recs := onePerPartition(names, parts, fmt.Appendf(nil, "round %d", round))
		start, fsyncs := time.Now(), disk.syncs.Load()
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		n := disk.syncs.Load() - fsyncs
		t.Logf("round %d: %d partitions in %v, %d fsyncs", round, len(recs), time.Since(start), n)
		// Round 1 creates every log. Later rounds flush each partition
		// (its data and index, and a recovery checkpoint now and then).
		if perPartition := float64(n) / float64(len(recs)); round > 1 && perPartition > 5 {
			t.Fatalf("round %d: %.1f fsyncs per partition: logs were closed and reopened", round, perPartition)
		}
	}
	testenv.Eventually(t, 30*time.Second, "the parked logs' descriptors given back", func() bool {
		return descriptorsUnder(t, dir) <= budget
	})
}

// descriptorsUnder counts this process's descriptors on files under dir.
func descriptorsUnder(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}
