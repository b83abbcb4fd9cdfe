package mirror_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// startMirrorProcess runs `tributary mirror` as its own process, so that it
// can be killed with SIGKILL, with a status endpoint.
func startMirrorProcess(t *testing.T, d *dc, target string, extra ...string) (*testenv.Process, string) {
	t.Helper()
	status := testenv.FreeAddr(t)
	args := append([]string{"mirror",
		"--source", d.name + "=" + d.zk,
		"--target", target,
		"--commit-interval", "100ms",
		"--session-timeout", "6s", // a loaded CI machine can stall a 2 s session
		"--log-interval", "1s",
		"--status", status,
	}, extra...)
	p := testenv.StartProcess(t, args...)
	testenv.WaitListening(t, p, status, 30*time.Second)
	return p, status
}

func fetchStatus(t *testing.T, addr string) (mirror.Status, error) {
	var st mirror.Status
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// zkSession opens a ZooKeeper session on a source for the test to look at
// the offset registry.
func zkSession(t *testing.T, d *dc) *cluster.ZKSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cluster.DialZooKeeper(ctx, d.zk, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// committedOffsets reads the mirror group's offset registry in a source.
func committedOffsets(t *testing.T, s *cluster.ZKSession, topic string, partitions int32) map[int32]int64 {
	return groupOffsets(t, s, "tributary-mirror", topic, partitions)
}

func groupOffsets(t *testing.T, s *cluster.ZKSession, group, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for p := range partitions {
		data, _, err := s.Conn.Get(s.Paths.Offset(group, topic, p))
		if err == zk.ErrNoNode {
			out[p] = 0
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if out[p], err = strconv.ParseInt(string(data), 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// waitCommitted waits until the group has committed n in every partition.
func waitCommitted(t *testing.T, s *cluster.ZKSession, topic string, partitions int32, n int64, timeout time.Duration) {
	t.Helper()
	testenv.Eventuallyf(t, timeout, func() (bool, string) {
		offs := committedOffsets(t, s, topic, partitions)
		done := true
		for _, o := range offs {
			done = done && o >= n
		}
		return done, fmt.Sprintf("committed offsets %v, want %d everywhere", offs, n)
	})
}

// checkRuns checks that seq holds every index in [0, n) and is a series of
// runs of consecutive indexes, each starting at or before where the one
// before ended: records may repeat, none may be skipped or reordered
// within a run. It returns the number of repeated records.
func checkRuns(seq []int, n int) (dups int, err error) {
	if len(seq) == 0 || seq[0] != 0 {
		return 0, fmt.Errorf("does not start at index 0")
	}
	end := 0 // one past the highest index seen
	for i, x := range seq {
		switch {
		case i > 0 && x == seq[i-1]+1:
		case i > 0 && x > seq[i-1]+1 || x > end:
			return 0, fmt.Errorf("index %d follows %d: records %d..%d skipped", x, seq[i-1], seq[i-1]+1, x-1)
		case i > 0:
			// A new run: a repeat from an earlier commit point.
		}
		end = max(end, x+1)
	}
	if end != n {
		return 0, fmt.Errorf("ends at %d, want %d", end, n)
	}
	return len(seq) - n, nil
}

// SIGKILL twice during the copy, restart each time: nothing is lost, and
// what is repeated is exactly what was copied after the last commit.
func TestMirrorSurvivesSIGKILL(t *testing.T) {
	const (
		topic      = "clicks"
		partitions = 12
		perPart    = 10000
		total      = partitions * perPart
	)
	needServices(t)
	testenv.Binary(t) // build first: the copy must not be over before the first run starts
	d := startDC(t, "dc1", 1)
	target := testenv.StartBroker(t)
	createTopic(t, d.addrs(), topic, partitions)
	// About 15,000 records/s for 8s: the mirror copies while they come.
	produced := produceSlowly(t, d.addrs(), "dc1", topic, partitions, perPart, 100, 60*time.Millisecond)
	// Fresh metadata on every look: the topic appears during the test.
	tcl := newClient(t, []string{target.Addr}, kgo.MetadataMinAge(10*time.Millisecond))
	zs := zkSession(t, d)

	// runs[k] is where run k started (the commit snapshot) and ended (what
	// the target held when it was killed), per partition.
	type cut struct{ committed, copied map[int32]int64 }
	var cuts []cut
	var held, committedBefore int64
	for k := range 2 {
		// Each run copies a quarter of the records and commits at least
		// once, then dies.
		at := held + total/4
		// The default commit interval, so that there is something to repeat.
		p, _ := startMirrorProcess(t, d, target.Addr, "--commit-interval", "1s")
		testenv.Eventuallyf(t, 2*time.Minute, func() (bool, string) {
			n, _ := endOffsets(t, tcl, topic)
			return n >= at && sum(committedOffsets(t, zs, topic, partitions)) > committedBefore,
				fmt.Sprintf("run %d: target holds %d records, waiting for %d and a commit:\n%s", k+1, n, at, p.Output.String())
		})
		p.Kill()
		time.Sleep(300 * time.Millisecond) // let the broker finish requests the mirror sent before dying
		var copied map[int32]int64
		held, copied = endOffsets(t, tcl, topic)
		committed := committedOffsets(t, zs, topic, partitions)
		committedBefore = sum(committed)
		t.Logf("run %d killed: target holds %v, committed %v", k+1, copied, committed)
		cuts = append(cuts, cut{committed, copied})
	}
	p, _ := startMirrorProcess(t, d, target.Addr)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, zs, topic, partitions, perPart, 2*time.Minute)
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("mirror did not stop cleanly: %v\n%s", err, p.Output.String())
	}

	streams := checkCopy(t, readTopic(t, []string{target.Addr}, topic))
	var dups int
	for part := range int32(partitions) {
		seq := streams[stream{"dc1", part}]
		n, err := checkRuns(seq, perPart)
		if err != nil {
			t.Fatalf("partition %d: %v", part, err)
		}
		// The exact shape: run 1 from 0, each restart exactly at the
		// offset committed when its predecessor was killed.
		var want []int
		var from, held int64 // where the current run starts; what the target held before it
		for _, c := range cuts {
			for i := range c.copied[part] - held {
				want = append(want, int(from+i))
			}
			from, held = c.committed[part], c.copied[part]
		}
		for i := from; i < perPart; i++ {
			want = append(want, int(i))
		}
		if !equalInts(seq, want) {
			t.Fatalf("partition %d: the target does not repeat exactly what followed the last commits %v", part, cuts)
		}
		dups += n
	}
	t.Logf("two SIGKILLs: %d records copied twice (%.2f%% of %d), none lost", dups, 100*float64(dups)/total, total)
}

func sum(m map[int32]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Two mirror processes in one group split a source's partitions; when one
// is killed, the other takes its partitions over, and nothing is lost.
func TestMirrorGroupSharesAndTakesOver(t *testing.T) {
	const (
		topic      = "orders"
		partitions = 12
		perPart    = 2000
	)
	needServices(t)
	testenv.Binary(t)
	d := startDC(t, "dc1", 2)
	target := testenv.StartBroker(t)
	createTopic(t, d.addrs(), topic, partitions)
	produce(t, d.addrs(), "dc1", topic, partitions, 0, perPart/2)

	a, statusA := startMirrorProcess(t, d, target.Addr)
	_, statusB := startMirrorProcess(t, d, target.Addr)
	owned := func(addr string) int {
		st, err := fetchStatus(t, addr)
		if err != nil || len(st.Sources) == 0 {
			return -1
		}
		return len(st.Sources[0].Partitions)
	}
	testenv.Eventually(t, time.Minute, "the two mirrors to split 12 partitions", func() bool {
		na, nb := owned(statusA), owned(statusB)
		return na > 0 && nb > 0 && na+nb == partitions
	})
	t.Logf("split: A copies %d partitions, B copies %d", owned(statusA), owned(statusB))

	a.Kill()
	testenv.Eventually(t, time.Minute, "the surviving mirror to take all 12 partitions", func() bool {
		return owned(statusB) == partitions
	})
	produce(t, d.addrs(), "dc1", topic, partitions, perPart/2, perPart)
	waitCommitted(t, zkSession(t, d), topic, partitions, perPart, time.Minute)

	var dups int
	for part, seq := range checkCopy(t, readTopic(t, []string{target.Addr}, topic)) {
		n, err := checkRuns(seq, perPart)
		if err != nil {
			t.Fatalf("partition %d: %v", part.partition, err)
		}
		dups += n
	}
	t.Logf("take-over: nothing lost, %d records repeated", dups)
}
