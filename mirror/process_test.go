package mirror_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

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
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status: %s", resp.Status) // 503 while starting
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
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
	waitForCount(t, []string{target.Addr}, topic, partitions*perPart, time.Minute)
	time.Sleep(500 * time.Millisecond) // anything more would be a duplicate: let it land

	var dups int
	for part, seq := range checkCopy(t, readTopic(t, []string{target.Addr}, topic)) {
		n, err := checkRuns(seq, perPart)
		if err != nil {
			t.Fatalf("partition %d: %v", part.partition, err)
		}
		dups += n
	}
	if dups > 0 {
		t.Fatalf("take-over: %d records copied twice", dups)
	}
}

// SIGTERM while the source, the target and the audit's brokers (the
// target's) are all stopped, with records waiting for the target: the
// process exits within --shutdown-timeout all the same.
func TestMirrorSIGTERMWithEverythingDown(t *testing.T) {
	needServices(t)
	testenv.Binary(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	_, regURL := startRegistry(t)
	createTopic(t, []string{src.Addr}, "views", 2)
	produce(t, []string{src.Addr}, "dc1", "views", 2, 0, 100)
	p, _ := mirrorProcess(t, "dc1", src.Addr, dst.Addr, "--target-registry", regURL, "--audit", "--shutdown-timeout", "3s")
	waitForCount(t, []string{dst.Addr}, "views", 200, time.Minute)
	dst.Stop()
	produce(t, []string{src.Addr}, "dc1", "views", 2, 100, 200) // waits for a target that is gone
	time.Sleep(2 * time.Second)
	src.Stop()
	start := time.Now()
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, p.Output.String())
	}
	if took := time.Since(start); took > 3*time.Second+500*time.Millisecond {
		t.Fatalf("exited %v after SIGTERM; --shutdown-timeout is 3s\n%s", took, p.Output.String())
	} else {
		t.Logf("exited %v after SIGTERM with source, target and audit brokers down", took.Round(time.Millisecond))
	}
}
