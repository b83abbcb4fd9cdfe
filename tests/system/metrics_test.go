package system_test

import (
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// `tributary standalone --metrics-listen` serves the broker's and the
// registry's metrics on one endpoint, which promtool accepts, and answers
// /healthz and /readyz.
func TestStandaloneMetricsEndpoint(t *testing.T) {
	testenv.Needs(t, testenv.Tributary, testenv.Program("promtool"))
	addr, reg, mon := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", t.TempDir(), "--listen", addr,
		"--registry-listen", reg, "--metrics-listen", mon)
	testenv.WaitListening(t, p, mon, 60*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("pings"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 10 {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "/readyz answers 200 once the registry replayed _schemas", func() bool {
		code, _ := httpGet(t, "http://"+mon+"/readyz")
		return code == 200
	})
	if code, _ := httpGet(t, "http://"+mon+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	code, text := httpGet(t, "http://"+mon+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`tributary_broker_topic_messages_in_total{topic="pings"} 10`,
		`tributary_partition_high_watermark{partition="0",topic="pings"} 10`,
		"tributary_registry_ready 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// zkLink is a TCP proxy in front of ZooKeeper that a test can cut, so a
// broker process loses its ZooKeeper while ZooKeeper keeps running for
// everyone else.
type zkLink struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func newZKLink(t *testing.T, target string) *zkLink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &zkLink{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); l.cut() })
	go l.accept()
	return l
}

func (l *zkLink) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		if l.down {
			l.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.conns = append(l.conns, c, up)
		l.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

func (l *zkLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

func (l *zkLink) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = false
}

// A cluster broker's /readyz fails while its ZooKeeper session is down and
// recovers with it; /healthz stays up meanwhile, so a supervisor does not
// restart a broker that only waits for ZooKeeper.
func TestClusterBrokerNotReadyWithoutZooKeeper(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	connect := testenv.StartZooKeeper(t)
	hostPort, chroot, _ := strings.Cut(connect, "/")
	link := newZKLink(t, hostPort)
	addr, mon := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "broker", "--id", "1", "--zookeeper", link.ln.Addr().String()+"/"+chroot,
		"--listen", addr, "--data-dir", t.TempDir(), "--metrics-listen", mon)
	testenv.WaitListening(t, p, mon, 60*time.Second)
	status := func() int { code, _ := httpGet(t, "http://"+mon+"/readyz"); return code }
	testenv.Eventually(t, 30*time.Second, "/readyz answers 200 with ZooKeeper up", func() bool { return status() == 200 })

	link.cut()
	testenv.Eventually(t, 30*time.Second, "/readyz answers 503 with ZooKeeper cut off", func() bool { return status() == http.StatusServiceUnavailable })
	if _, body := httpGet(t, "http://"+mon+"/readyz"); !strings.Contains(body, "zookeeper") {
		t.Errorf("/readyz does not name ZooKeeper: %q", body)
	}
	if code, _ := httpGet(t, "http://"+mon+"/healthz"); code != 200 {
		t.Errorf("/healthz while ZooKeeper is cut off: %d", code)
	}
	link.heal()
	testenv.Eventually(t, 60*time.Second, "/readyz answers 200 again once ZooKeeper is back", func() bool { return status() == 200 })
}
