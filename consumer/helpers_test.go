package consumer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/consumer"
	"github.com/tributary-io/tributary/internal/testenv"
)

const sessionTimeout = 2 * time.Second

// TestMain doubles as a consumer process that a test can kill -9: with
// TRIBUTARY_TEST_CONSUMER set, the test binary joins the group described
// there and prints every record it receives instead of running tests.
func TestMain(m *testing.M) {
	if cfg := os.Getenv("TRIBUTARY_TEST_CONSUMER"); cfg != "" {
		os.Exit(runHelperConsumer(cfg))
	}
	os.Exit(m.Run())
}

type helperConfig struct {
	ZooKeeper, Group, Topic, ID string
	// Delay per record keeps the process busy, so a kill lands while it
	// has delivered records it has not committed yet.
	Delay time.Duration
}

func runHelperConsumer(raw string) int {
	var hc helperConfig
	if err := json.Unmarshal([]byte(raw), &hc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	g, err := consumer.Join(ctx, consumer.Config{
		ZooKeeper: hc.ZooKeeper, Group: hc.Group, Topics: []string{hc.Topic}, ID: hc.ID,
		SessionTimeout: sessionTimeout, CommitInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	for {
		rec, err := g.Next(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// Printed means processed: the offset is committed only once Next
		// is called again, after this line is out.
		fmt.Printf("rec %d %d %s\n", rec.Partition, rec.Offset, rec.Value)
		time.Sleep(hc.Delay)
	}
}

// helperProcess is a consumer running in its own process.
type helperProcess struct {
	id     string
	cmd    *exec.Cmd
	stderr *strings.Builder
	done   chan struct{}
}

func startHelper(t *testing.T, connect, group, topic, id string, delay time.Duration, got *deliveries) *helperProcess {
	t.Helper()
	cfg, _ := json.Marshal(helperConfig{connect, group, topic, id, delay})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TRIBUTARY_TEST_CONSUMER="+string(cfg))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &helperProcess{id: id, cmd: cmd, stderr: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{w: h.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(h.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 1 && f[0] == "ready" {
				close(ready)
				continue
			}
			if len(f) != 4 || f[0] != "rec" {
				continue
			}
			p, _ := strconv.Atoi(f[1])
			o, _ := strconv.ParseInt(f[2], 10, 64)
			got.add(id, int32(p), o, f[3])
		}
		cmd.Wait()
	}()
	t.Cleanup(func() { h.kill() })
	select {
	case <-ready:
	case <-h.done:
		t.Fatalf("consumer process %s exited before joining:\n%s", id, h.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("consumer process %s did not join within 30s:\n%s", id, h.stderr)
	}
	return h
}

// kill is kill -9: no commit, no clean close; ZooKeeper notices only when
// the session times out.
func (h *helperProcess) kill() {
	h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.done
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// deliveries records what every consumer of a test received.
type deliveries struct {
	mu   sync.Mutex
	list []delivery
}

type delivery struct {
	consumer  string
	partition int32
	offset    int64
	value     string
}

func (d *deliveries) add(consumer string, p int32, o int64, v string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.list = append(d.list, delivery{consumer, p, o, v})
}

func (d *deliveries) snapshot() []delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.list)
}

// distinct counts distinct values received.
func (d *deliveries) distinct() int {
	seen := map[string]bool{}
	for _, r := range d.snapshot() {
		seen[r.value] = true
	}
	return len(seen)
}

// waitAll waits until values from..to-1 were all received.
func (d *deliveries) waitAll(t *testing.T, to int, within time.Duration) {
	t.Helper()
	testenv.Eventually(t, within, fmt.Sprintf("all %d values received", to), func() bool { return d.distinct() >= to })
}

// len is the number of deliveries so far: a mark for repeatsSince.
func (d *deliveries) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.list)
}

// repeatsSince returns the deliveries from index mark on that repeat a
// value delivered before.
func (d *deliveries) repeatsSince(mark int) []delivery {
	seen := map[string]bool{}
	var dups []delivery
	for i, r := range d.snapshot() {
		if seen[r.value] && i >= mark {
			dups = append(dups, r)
		}
		seen[r.value] = true
	}
	return dups
}

// check checks that every value below n arrived and that the set of values
// matches by count and checksum; it returns how many deliveries repeated a
// value.
func (d *deliveries) check(t *testing.T, n int) (repeats int) {
	t.Helper()
	seen := map[string]int{}
	var sum uint32
	for _, r := range d.snapshot() {
		seen[r.value]++
		if seen[r.value] == 1 {
			sum ^= crc32.ChecksumIEEE([]byte(r.value))
		} else {
			repeats++
		}
	}
	var want uint32
	for i := range n {
		v := strconv.Itoa(i)
		want ^= crc32.ChecksumIEEE([]byte(v))
		if seen[v] == 0 {
			t.Fatalf("value %s was never delivered (%d distinct of %d)", v, len(seen), n)
		}
	}
	if len(seen) != n || sum != want {
		t.Fatalf("received %d distinct values with checksum %08x, want %d with %08x", len(seen), sum, n, want)
	}
	return repeats
}

// consume runs Next in a goroutine until the group is closed or fails.
func consume(t *testing.T, g *consumer.Group, got *deliveries) {
	t.Helper()
	go func() {
		for {
			rec, err := g.Next(context.Background())
			if err != nil {
				if !errors.Is(err, consumer.ErrClosed) {
					t.Errorf("consumer %s: %v", g.ID(), err)
				}
				return
			}
			got.add(g.ID(), rec.Partition, rec.Offset, string(rec.Value))
		}
	}()
}

func join(t *testing.T, cfg consumer.Config) *consumer.Group {
	t.Helper()
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = sessionTimeout
	}
	if cfg.CommitInterval == 0 {
		cfg.CommitInterval = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := consumer.Join(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// waitStable waits until the owners registry gives each of the topic's
// partitions to exactly one of ids, agreeing with what in-process members
// report, and returns partition → owner.
func waitStable(t *testing.T, connect, group, topic string, partitions int, ids []string, members ...*consumer.Group) map[int32]string {
	t.Helper()
	s, err := cluster.DialZooKeeper(context.Background(), connect, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var owners map[int32]string
	testenv.Eventually(t, 20*time.Second, fmt.Sprintf("partitions of %s owned once each by %v", topic, ids), func() bool {
		owners = map[int32]string{}
		for p := range int32(partitions) {
			data, _, err := s.Conn.Get(s.Paths.Owner(group, topic, p))
			if err != nil || !slices.Contains(ids, string(data)) {
				return false
			}
			owners[p] = string(data)
		}
		for _, g := range members {
			mine := g.Assigned()[topic]
			for p, o := range owners {
				if (o == g.ID()) != slices.Contains(mine, p) {
					return false
				}
			}
		}
		return true
	})
	return owners
}

// committed reads the offset registry of a group's topic.
func committed(t *testing.T, connect, group, topic string, partitions int) map[int32]int64 {
	t.Helper()
	s, err := cluster.DialZooKeeper(context.Background(), connect, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[int32]int64{}
	for p := range int32(partitions) {
		data, _, err := s.Conn.Get(s.Paths.Offset(group, topic, p))
		if err != nil {
			continue
		}
		out[p], _ = strconv.ParseInt(string(data), 10, 64)
	}
	return out
}

func newClient(t *testing.T, seed string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func testLogger(t *testing.T) *slog.Logger { return testenv.Logger(t, slog.LevelInfo) }
