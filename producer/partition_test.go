package producer

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka's own murmur2 test vectors (clients/src/test/java/org/apache/kafka/
// common/utils/UtilsTest.java, testMurmur2): the signed 32-bit hash the Java
// client computes for each key.
var javaMurmur2 = []struct {
	key  string
	hash int32
}{
	{"21", -973932308},
	{"foobar", -790332482},
	{"a-little-bit-long-string", -985981536},
	{"a-little-bit-longer-string", -1486304829},
	{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
	{"abc", 479470107},
}

// javaPartition is Kafka's default partitioner for a keyed record:
// Utils.toPositive(Utils.murmur2(key)) % numPartitions.
func javaPartition(hash int32, n int32) int32 {
	return int32(uint32(hash)&0x7fffffff) % n
}

func TestByKeyMatchesTheJavaClient(t *testing.T) {
	// With n = 2^31-1 the partition is the masked hash itself (bar one
	// value), so this checks all 31 bits the Java client uses.
	for _, n := range []int32{1, 2, 3, 12, 100, 1<<31 - 1} {
		for _, v := range javaMurmur2 {
			want := javaPartition(v.hash, n)
			if got := PartitionForKey([]byte(v.key), n); got != want {
				t.Errorf("PartitionForKey(%q, %d) = %d, the Java client picks %d", v.key, n, got, want)
			}
			part := Partitioner(ByKey).ForTopic("t")
			if got := part.Partition(&kgo.Record{Key: []byte(v.key)}, int(n)); int32(got) != want {
				t.Errorf("ByKey partitioner: %q over %d → %d, Java: %d", v.key, n, got, want)
			}
		}
	}
}

func TestByKeyIsStableAndSpreads(t *testing.T) {
	seen := map[int32]bool{}
	for i := range 1000 {
		key := []byte(fmt.Sprintf("user-%d", i))
		p := PartitionForKey(key, 12)
		if again := PartitionForKey(key, 12); again != p {
			t.Fatalf("key %s: %d then %d", key, p, again)
		}
		seen[p] = true
	}
	if len(seen) != 12 {
		t.Fatalf("1000 keys reached %d of 12 partitions", len(seen))
	}
	if PartitionForKey(nil, 12) != -1 || PartitionForKey([]byte("k"), 0) != -1 {
		t.Fatal("a nil key or no partitions must give -1")
	}
}

func TestOptionsRejectNonsense(t *testing.T) {
	for _, cfg := range []Config{
		{Partitioning: 9},
		{Acks: 9},
		{BatchBytes: -1},
		{Linger: -1},
	} {
		if _, err := Options(cfg); err == nil {
			t.Errorf("Options(%+v) accepted it", cfg)
		}
	}
}
