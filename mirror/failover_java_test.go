package mirror_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// A Java application fails over to the analysis datacenter: an Apache
// Kafka 4.4 consumer group reads part of a source topic, committing
// synchronously after each poll, and crashes (kill -9) mid-stream. The
// mirror copies the topic (whose target also holds 50 records of its own
// per partition, so every offset differs) and translates the group's
// offsets. The group, started on the target, then reads every record the
// source consumer had not committed, exactly once, and nothing else: no
// record skipped, none read twice except those the crashed consumer had
// read but not yet committed.
func TestMirrorJavaGroupFailsOver(t *testing.T) {
	const topic, group, partitions, own, first, total = "clicks", "billing", 3, 50, 2000, 2200
	needServices(t)
	testenv.Needs(t, testenv.JVM)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createTopic(t, []string{src.Addr}, topic, partitions)
	createTopic(t, []string{dst.Addr}, topic, partitions)
	produce(t, []string{dst.Addr}, "analysis", topic, partitions, 0, own)

	_, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{src.Addr}}}, Target: []string{dst.Addr},
		Groups: "^" + group + "$", GroupSyncInterval: 200 * time.Millisecond})
	produce(t, []string{src.Addr}, "dc1", topic, partitions, 0, first)

	// The application runs in dc1 until its process dies, part-way.
	before := testenv.StartKafkaMember(t, src.Addr, group, topic, "classic", "dc1-app")
	testenv.Eventuallyf(t, 2*time.Minute, func() (bool, string) {
		n := map[int32]int{}
		for _, r := range before.Records() {
			n[r.Partition]++
		}
		return len(n) == partitions && n[0] >= 100 && n[1] >= 100 && n[2] >= 100,
			fmt.Sprintf("the dc1 consumer read %v records per partition, want 100 of each", n)
	})
	before.Kill()
	// More records arrive in dc1 before it is lost, and are copied.
	produce(t, []string{src.Addr}, "dc1", topic, partitions, first, total)
	waitForCount(t, []string{dst.Addr}, topic, partitions*(own+total), time.Minute)

	// The translation is exact: source offset c (the next record to read)
	// becomes the target offset right after the copy of c-1, which is c's
	// copy or a transaction marker before it. Each target partition holds
	// its own records and then the copies of one source partition in
	// order, with the transactions' markers among them.
	sadm := kadm.NewClient(newClient(t, []string{src.Addr}))
	tadm := kadm.NewClient(newClient(t, []string{dst.Addr}))
	committed := map[int32]int64{}
	testenv.Eventuallyf(t, time.Minute, func() (bool, string) {
		s, err := sadm.FetchOffsets(ctx, group)
		if err != nil {
			return false, "source offsets: " + err.Error()
		}
		d, err := tadm.FetchOffsets(ctx, group)
		if err != nil {
			return false, "target offsets: " + err.Error()
		}
		for p := range int32(partitions) {
			so, ok := s.Lookup(topic, p)
			if !ok || so.Err != nil || so.At <= 0 {
				return false, fmt.Sprintf("the dc1 consumer committed nothing for partition %d", p)
			}
			committed[p] = so.At
			// Right after the copy of so.At-1: the copy of so.At, or a
			// transaction marker before it (nothing a consumer reads).
			after, upTo := copyOffset(t, dst.Addr, topic, p, so.At-1), copyOffset(t, dst.Addr, topic, p, so.At)
			if do, ok := d.Lookup(topic, p); !ok || do.At <= after || do.At > upTo {
				return false, fmt.Sprintf("partition %d: committed %d in the source, %d in the target, want after %d and at most %d", p, so.At, do.At, after, upTo)
			}
		}
		return true, ""
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the dc1 consumer read %d records and committed %v", len(before.Records()), committed)

	// The application starts again in the analysis datacenter.
	after := testenv.StartKafkaMember(t, dst.Addr, group, topic, "classic", "analysis-app")
	testenv.Eventuallyf(t, 2*time.Minute, func() (bool, string) {
		last := map[int32]int{}
		for _, r := range after.Records() {
			_, p, i := parseValue(t, r.Value)
			last[p] = max(last[p], i)
		}
		for p := range int32(partitions) {
			if last[p] != total-1 {
				return false, fmt.Sprintf("the analysis consumer's last record per partition: %v, want %d in each", last, total-1)
			}
		}
		return true, ""
	})
	if err := after.Close(); err != nil {
		t.Fatal(err)
	}
	if p := after.Problems(); len(p) > 0 {
		t.Fatalf("the analysis consumer lost partitions or failed commits: %v", p)
	}

	// Exactly the records from the committed position on, each once.
	read := map[int32]map[int]int{} // source partition -> index -> times read after failing over
	for _, r := range after.Records() {
		cluster, p, i := parseValue(t, r.Value)
		if cluster != "dc1" || p != r.Partition {
			t.Fatalf("after failing over, the consumer read %s's record %d/%d at %d/%d", cluster, p, i, r.Partition, r.Offset)
		}
		if read[p] == nil {
			read[p] = map[int]int{}
		}
		read[p][i]++
	}
	uncommitted := 0
	readBefore := map[int32]map[int]bool{}
	for _, r := range before.Records() {
		_, p, i := parseValue(t, r.Value)
		if readBefore[p] == nil {
			readBefore[p] = map[int]bool{}
		}
		readBefore[p][i] = true
		if int64(i) >= committed[p] {
			uncommitted++
		}
	}
	for p := range int32(partitions) {
		for i := range total {
			switch n := read[p][i]; {
			case int64(i) < committed[p] && !readBefore[p][i]:
				t.Errorf("partition %d: record %d is below the committed offset %d but the dc1 consumer never read it", p, i, committed[p])
			case int64(i) < committed[p] && n > 0:
				t.Errorf("partition %d: record %d was read again after failing over, though committed before (at %d)", p, i, committed[p])
			case int64(i) >= committed[p] && n != 1:
				t.Errorf("partition %d: record %d was read %d times after failing over, want once (committed: %d)", p, i, n, committed[p])
			}
		}
	}
	t.Logf("after failing over the consumer read %d records; %d of them the dc1 consumer had read but not committed", len(after.Records()), uncommitted)
}

// copyOffset is the target offset of the copy of source record c of
// partition p (-1 while there is none).
func copyOffset(t *testing.T, target, topic string, p int32, c int64) int64 {
	t.Helper()
	want := fmt.Sprintf("dc1/%d/%d", p, c)
	for _, r := range readTopic(t, []string{target}, topic)[p] {
		if h, ok := originHeader(r); ok && h == want {
			return r.Offset
		}
	}
	return -1
}

// originHeader is the value of a record's origin header.
func originHeader(r *kgo.Record) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == mirror.OriginHeader {
			return string(h.Value), true
		}
	}
	return "", false
}

// parseValue reads a test record's cluster, partition and index from the
// value a Java consumer printed.
func parseValue(t *testing.T, v string) (cluster string, p int32, i int) {
	t.Helper()
	f := strings.SplitN(v, "|", 4)
	if len(f) < 4 {
		t.Fatalf("value %q is not a test record", v)
	}
	pp, err1 := strconv.Atoi(f[1])
	ii, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		t.Fatalf("value %q is not a test record", v)
	}
	return f[0], int32(pp), ii
}
