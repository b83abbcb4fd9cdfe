package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/internal/zkprobe"

	"github.com/tributary-io/tributary/cluster"
)

// zkInstallHint is what a developer must run when ZooKeeper is missing; the
// tests fail rather than skip (except under -short), because a skipped
// coordination test hides real bugs.
const zkInstallHint = "apt-get update && apt-get install -y zookeeper default-jre-headless"

// zkServer is the one ZooKeeper process of this test binary.
type zkServer struct {
	addr string // 127.0.0.1:port
	// stdin keeps the watchdog's standard input open; it is closed only when
	// this process exits, which is what stops ZooKeeper even after a crash or
	// a kill -9 of the test binary.
	stdin io.WriteCloser
}

var (
	zkOnce   sync.Once
	zkShared *zkServer
	zkErr    error
	zkSeq    atomic.Int64
)

// StartZooKeeper returns the connect string of a real ZooKeeper 3.8 server
// (Debian's zookeeper package), rooted at a chroot that belongs to this test
// alone: "127.0.0.1:PORT/test-<name>-<n>". The chroot node exists on return.
//
// One server serves the whole test binary, because starting a JVM costs about
// a second and chroots already isolate tests from each other. Each test's
// chroot is deleted in t.Cleanup; the server itself stops when the test binary
// exits (however it exits: a watchdog shell kills it and removes its data
// directory when the binary's end of a pipe closes).
func StartZooKeeper(t testing.TB) string {
	t.Helper()
	Needs(t, ZooKeeper)
	zkOnce.Do(func() { zkShared, zkErr = startZooKeeper() })
	if zkErr != nil {
		t.Fatalf("starting ZooKeeper: %v", zkErr)
	}
	chroot := fmt.Sprintf("/test-%s-%d", chrootName(t.Name()), zkSeq.Add(1))
	conn := zkDial(t, zkShared.addr)
	defer conn.Close()
	if _, err := conn.Create(chroot, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("creating ZooKeeper chroot %s: %v", chroot, err)
	}
	t.Cleanup(func() {
		conn := zkDial(t, zkShared.addr)
		defer conn.Close()
		if err := zkDeleteTree(conn, chroot); err != nil {
			t.Logf("removing ZooKeeper chroot %s: %v", chroot, err)
		}
	})
	return zkShared.addr + chroot
}

// ZooKeeperAddr returns the host:port of the shared server (no chroot), for
// tests that need to look outside their own chroot.
func ZooKeeperAddr(t testing.TB) string {
	t.Helper()
	Needs(t, ZooKeeper)
	zkOnce.Do(func() { zkShared, zkErr = startZooKeeper() })
	if zkErr != nil {
		t.Fatalf("starting ZooKeeper: %v", zkErr)
	}
	return zkShared.addr
}

func chrootName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// zooKeeperClasspath finds the ZooKeeper server jars. Debian's zookeeper.jar
// names its dependencies in its manifest, so it alone is enough; an slf4j
// binding is added so that ZooKeeper's own log reaches zookeeper.log.
func zooKeeperClasspath() (string, error) {
	if cp := os.Getenv("TRIBUTARY_ZOOKEEPER_CLASSPATH"); cp != "" {
		return cp, nil
	}
	jar := "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("ZooKeeper is not installed (%s is missing); install it with: %s", jar, zkInstallHint)
	}
	cp := []string{jar}
	for _, extra := range []string{"/usr/share/java/zookeeper-jute.jar", "/usr/share/java/slf4j-simple.jar"} {
		if _, err := os.Stat(extra); err == nil {
			cp = append(cp, extra)
		}
	}
	return strings.Join(cp, ":"), nil
}

// watchdog runs ZooKeeper in the background and waits for its standard input
// to close; then it kills ZooKeeper and removes the data directory. The
// explicit <&3 matters: a background job's stdin is /dev/null otherwise.
const watchdog = `
exec 3<&0
"$JAVA" "$@" </dev/null &
zk=$!
( cat <&3 >/dev/null; kill $zk 2>/dev/null ) &
wait $zk
status=$?
rm -rf "$ZKDIR"
exit $status
`

func startZooKeeper() (*zkServer, error) { return startZooKeeperOn(freePort) }

// zkPortTries is how many ports a ZooKeeper start tries before giving up.
const zkPortTries = 5

// zkStartWithin is how long a ZooKeeper start waits for its server to
// answer. A start is retried only on a taken port, so this one wait is all
// the patience a slow JVM on a loaded machine gets: as much as the three
// 30s tries it had when every failure was retried.
const zkStartWithin = 90 * time.Second

// startZooKeeperOn starts ZooKeeper on a port from pick, and on another if
// another process turned out to have bound that one first.
func startZooKeeperOn(pick func() (int, error)) (*zkServer, error) {
	cp, err := zooKeeperClasspath()
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java is not installed; install it with: %s", zkInstallHint)
	}
	var errs []error
	for range zkPortTries {
		port, err := pick()
		if err != nil {
			return nil, err
		}
		s, err := tryStartZooKeeper(java, cp, port)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func tryStartZooKeeper(java, cp string, port int) (*zkServer, error) {
	dir, err := os.MkdirTemp("", "tributary-zookeeper-")
	if err != nil {
		return nil, err
	}
	// tickTime 500ms lets tests use sessions as short as one second; the
	// admin HTTP server is off because it would want a fixed port. conf
	// tells this server from another one that bound the port first.
	cfg := fmt.Sprintf(`tickTime=500
dataDir=%s/data
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=1000
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons,conf
`, dir, port)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The log is read through this descriptor: the watchdog removes dir,
	// log included, as soon as ZooKeeper exits, and the log of a start
	// that failed is what says why (a port taken, say).
	logFile, err := os.OpenFile(filepath.Join(dir, "zookeeper.log"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logFile.Close()

	cmd := exec.Command("/bin/sh", "-c", watchdog, "zookeeper-watchdog",
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dzookeeper.admin.enableServer=false",
		"-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	cmd.Env = append(os.Environ(), "JAVA="+java, "ZKDIR="+dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting ZooKeeper: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(zkStartWithin)
	for time.Now().Before(deadline) {
		// Whoever answers must be this server: another ZooKeeper (of a
		// test binary running beside this one) that bound the port first
		// answers ruok too, and its sessions end when its binary does.
		if zkprobe.Ruok(addr) {
			switch dataDir := zkDataDir(addr); {
			case strings.HasPrefix(dataDir, dir+"/"):
				return &zkServer{addr: addr, stdin: stdin}, nil
			case dataDir != "":
				stdin.Close()
				<-exited
				return nil, fmt.Errorf("ZooKeeper on %s: %w (another ZooKeeper, with data in %s, answers there)", addr, errPortTaken, dataDir)
			}
		}
		select {
		case err := <-exited:
			tail := fileTail(logFile)
			os.RemoveAll(dir)
			if strings.Contains(tail, "Address already in use") {
				return nil, fmt.Errorf("ZooKeeper on %s: %w; its log:\n%s", addr, errPortTaken, tail)
			}
			return nil, fmt.Errorf("ZooKeeper exited before answering on %s (%v); its log:\n%s", addr, err, tail)
		case <-time.After(100 * time.Millisecond):
		}
	}
	tail := fileTail(logFile)
	stdin.Close()
	<-exited
	return nil, fmt.Errorf("ZooKeeper did not answer ruok on %s within %v; its log:\n%s", addr, zkStartWithin, tail)
}

// zkDataDir asks the ZooKeeper at addr for its configuration (the conf
// four-letter word) and returns its data directory, or "" if it did not
// say (not serving yet, or not answering).
func zkDataDir(addr string) string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("conf")); err != nil {
		return ""
	}
	answer, _ := io.ReadAll(io.LimitReader(c, 64<<10))
	for _, line := range strings.Split(string(answer), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "dataDir="); ok {
			return v
		}
	}
	return ""
}

func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	return fileTail(f)
}

// fileTail returns the last 40 lines of f from its start, whatever its
// offset (a child process shares it) and whether or not it is still linked.
func fileTail(f *os.File) string {
	var lines []string
	sc := bufio.NewScanner(io.NewSectionReader(f, 0, 1<<62))
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 40 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// zkDial opens a short-lived session on the server root for setup and
// cleanup; its log is silenced because connection chatter is noise here.
func zkDial(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatalf("connecting to ZooKeeper at %s: %v", addr, err)
	}
	// Generous: on a loaded 2-core machine the shared ZooKeeper JVM may
	// stall for seconds; only a broken server takes the whole wait.
	const within = 30 * time.Second
	timeout := time.After(within)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-timeout:
			conn.Close()
			t.Fatalf("ZooKeeper at %s gave no session within %v", addr, within)
		}
	}
}

// zkDeleteTree removes path and everything under it. Ephemeral nodes of
// sessions that are still open may reappear underneath; a few passes handle
// nodes that vanish or appear concurrently.
func zkDeleteTree(conn *zk.Conn, path string) error {
	var err error
	for range 5 {
		if err = deleteTree(conn, path); err == nil {
			return nil
		}
	}
	return err
}

func deleteTree(conn *zk.Conn, path string) error {
	children, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := deleteTree(conn, path+"/"+c); err != nil {
			return err
		}
	}
	if err := conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// ClusterSessionTimeout is the ZooKeeper session timeout of brokers started
// by StartCluster: short, so that tests see a dead broker leave quickly,
// yet long enough that a loaded 2-core CI machine does not stall it.
const ClusterSessionTimeout = 4 * time.Second

// StartCluster starts ZooKeeper and n brokers with ids 1..n that join it,
// each in this process with its own port and data directory, and returns
// the cluster's connect string with them. Brokers stop at the end of the
// test.
func StartCluster(t testing.TB, n int, opts ...BrokerOption) (connect string, brokers []*Broker) {
	t.Helper()
	connect = StartZooKeeper(t)
	for id := int32(1); id <= int32(n); id++ {
		brokers = append(brokers, StartClusterBroker(t, connect, id, opts...))
	}
	return connect, brokers
}

// StartClusterBroker starts one broker that joins the cluster at connect
// with the given id; with WithDataDir and WithAddr it restarts a stopped
// broker on its data and address.
func StartClusterBroker(t testing.TB, connect string, id int32, opts ...BrokerOption) *Broker {
	t.Helper()
	join := WithMetadata(func(self cluster.Broker) (cluster.Metadata, error) {
		self.ID = id
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		logger := Logger(t, slog.LevelWarn)
		return cluster.JoinZooKeeper(ctx, connect, self, logger, cluster.WithSessionTimeout(ClusterSessionTimeout))
	})
	return StartBroker(t, append([]BrokerOption{join}, opts...)...)
}
