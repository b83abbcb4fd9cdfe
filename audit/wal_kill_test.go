package audit_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// `tributary produce --audit-wal` under live traffic, killed with SIGKILL
// 20 times: at random moments (including while it reads back what the
// last one left) and, three times each, right after an acknowledgement whose
// count is not yet written, with monitoring events written but not sent,
// and with them sent but not marked so. Then one run to the end of its
// input. The producer tier then counts exactly what the brokers hold in
// every window: nothing lost (records whose acknowledgement a killed
// process never wrote are found in the brokers), nothing counted twice
// (monitoring events sent again carry the same ids), no monitoring event
// lost, and a snapshot of the brokers is exactly 100 % of it.
func TestProduceWALKillLoop(t *testing.T) {
	audittest.NeedServices(t)
	addr, regAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	b := testenv.StartProcess(t, "standalone", "--data-dir", t.TempDir(), "--listen", addr, "--registry-listen", regAddr)
	testenv.WaitListening(t, b, regAddr, 60*time.Second)
	testenv.WaitListening(t, b, addr, 60*time.Second)
	reg, err := sr.NewClient(sr.URLs("http://" + regAddr))
	if err != nil {
		t.Fatal(err)
	}
	createTopic(t, addr, "pageview", 4)

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	ws := pastWindows(3)
	args := []string{"produce", "--brokers", addr, "--registry", "http://" + regAddr, "--topic", "pageview",
		"--schema", pageviewSchema, "--server", "fe-1", "--audit-wal", t.TempDir(), "--audit-flush-interval", "100ms", "--shutdown-timeout", "60s"}
	plan := []string{"", "acked", "", "built", "", "sent", "", "", "acked", "", "built", "", "sent", "", "", "acked", "", "built", "sent", ""}
	next := new(atomic.Int64) // the next event's number
	foundByRecovery := 0
	for k, point := range plan {
		p := startProducer(t, args, point, next, ws)
		if point != "" {
			p.waitFor(t, "paused at "+point)
		} else {
			// A random moment of its life, from its first
			// instructions (reading the WAL back) to well into
			// producing and publishing.
			time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond)
		}
		p.kill()
		foundByRecovery += p.found()
		t.Logf("kill %d (%s): %d events offered so far", k+1, cmp(point, "random"), next.Load())
	}
	p := startProducer(t, args, "", next, ws)
	p.finish(t, 2000)
	foundByRecovery += p.found()

	// What the brokers hold, per window; and as tier live.
	held, _, err := audit.Scan(t.Context(), audit.ScanConfig{Brokers: []string{addr}, Registry: reg, Topics: []string{"pageview"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := audit.PublisherConfig{Client: audittest.Client(t, addr), Registry: reg, Tier: audit.TierLive}
	if err := audit.PublishSnapshot(t.Context(), cfg, "live", held, []string{"pageview"}, ws[0], ws[2].Add(audit.DefaultWindow)); err != nil {
		t.Fatal(err)
	}
	rep := reconcile(t, addr, reg, ws)
	var total, counted int64
	for _, w := range ws {
		want := held.Events[audit.Key{Topic: "pageview", Window: w, Server: "fe-1"}]
		total += want
		prod, live := row(t, rep, "pageview", w, audit.TierProducer), row(t, rep, "pageview", w, audit.TierLive)
		counted += prod.Received
		if prod.Received != want || prod.Status != audit.StatusOK {
			t.Errorf("window %s: the producer tier counted %d (%s), the brokers hold %d", w.Format(time.TimeOnly), prod.Received, prod.Status, want)
		}
		if live.Produced != want || live.Received != want || live.Missing != 0 || live.Excess != 0 || live.Duplicates != 0 || live.Completeness != 100 {
			t.Errorf("window %s: tier live %+v; want exactly 100 %% of %d", w.Format(time.TimeOnly), live, want)
		}
	}
	// Monitoring events sent again after a kill are expected, and noted
	// as delivered more than once; nothing else may be.
	for _, n := range rep.Notes {
		if !strings.Contains(n, "delivered more than once; each was counted once") {
			t.Errorf("report note %q", n)
		}
	}
	if len(rep.Lost) > 0 {
		t.Errorf("lost monitoring events %+v; want none", rep.Lost)
	}
	t.Logf("%d kills; %d events offered, %d in the brokers, %d counted by the producer tier (%d of them found in the brokers after a kill)",
		len(plan), next.Load(), total, counted, foundByRecovery)
	if total == 0 || total > next.Load() {
		t.Errorf("the brokers hold %d events of %d offered", total, next.Load())
	}
}

// producerProc is a `tributary produce` fed events until it is killed or
// its input ends.
type producerProc struct {
	cmd    *exec.Cmd
	out    *testenv.SyncBuffer
	stdin  io.WriteCloser
	stop   chan struct{}
	fed    chan struct{}
	done   chan struct{}
	events *atomic.Int64
}

// startProducer starts `tributary produce args...` (paused at point, if
// not empty) and feeds it pageviews numbered from *next on, over the three
// windows ws, about 4,000 a second, until it is killed or finish is called.
func startProducer(t *testing.T, args []string, point string, next *atomic.Int64, ws []time.Time) *producerProc {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Env = append(os.Environ(), "TRIBUTARY_AUDIT_PAUSE_AT="+point)
	p := &producerProc{cmd: cmd, out: &testenv.SyncBuffer{}, stop: make(chan struct{}), fed: make(chan struct{}), done: make(chan struct{}), events: next}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("output of tributary produce:\n%s", p.out.String())
		}
	})
	go func() {
		defer close(p.fed)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			var sb strings.Builder
			for range 20 {
				i := p.events.Add(1) - 1
				at := ws[i%3].Add(time.Duration(i%600_000) * time.Millisecond)
				fmt.Fprintf(&sb, `{"header": {"time": %d}, "memberId": %d, "pageKey": "home"}`+"\n", at.UnixMilli(), i)
			}
			if _, err := io.WriteString(p.stdin, sb.String()); err != nil {
				return
			}
		}
	}()
	return p
}

func (p *producerProc) waitFor(t *testing.T, what string) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, "tributary produce to print "+what, func() bool {
		select {
		case <-p.done:
			t.Fatalf("tributary produce exited before %q:\n%s", what, p.out.String())
		default:
		}
		return strings.Contains(p.out.String(), what)
	})
}

func (p *producerProc) kill() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.cmd.Process.Kill()
	<-p.done
	<-p.fed
}

// finish feeds n more events, closes the input and waits for a clean
// exit.
func (p *producerProc) finish(t *testing.T, n int) {
	t.Helper()
	start := p.events.Load()
	testenv.Eventually(t, 60*time.Second, "events fed", func() bool { return p.events.Load() >= start+int64(n) })
	close(p.stop)
	<-p.fed
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("tributary produce did not end 60 s after its input:\n%s", p.out.String())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("tributary produce exited %d:\n%s", code, p.out.String())
	}
}

var foundRE = regexp.MustCompile(`records_found_and_counted=(\d+)`)

// found is how many records the process found in the brokers for its
// predecessors.
func (p *producerProc) found() int {
	n := 0
	for _, m := range foundRE.FindAllStringSubmatch(p.out.String(), -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return n
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
