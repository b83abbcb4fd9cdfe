package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tributary-io/tributary/internal/zkprobe"
)

// ClusterNodes is the size of the replicated systems (tributary-rf3,
// kafka-rf3): three brokers, so that a replication factor of 3 with
// min.insync.replicas=2 survives one of them.
const ClusterNodes = 3

// process is one child process the bench started, with its output in a
// log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProcess starts bin with args, its output going to logPath. The child
// gets SIGKILL should the bench die without stopping it (a kill -9, a
// crash), so no broker outlives the run that started it.
func startProcess(name, logPath string, env []string, bin string, args ...string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(p.done) }()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits up to grace for the process to exit, then
// kills it.
func (p *process) stop(grace time.Duration) error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %v of SIGTERM", p.name, grace)
	}
}

// failure is err with the last lines of the process's log, which usually
// say why it did not come up.
func (p *process) failure(err error) error {
	out, _ := os.ReadFile(p.log)
	return fmt.Errorf("%s: %w\n%s", p.name, err, lastLines(out, 20))
}

// stopAll stops procs in parallel, the last of them (ZooKeeper) after the
// others, and joins what went wrong.
func stopAll(brokers []*process, last *process) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.stop(30 * time.Second); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if last != nil {
		errs = append(errs, last.stop(10*time.Second))
	}
	return errors.Join(errs...)
}

// startZooKeeper runs Debian's ZooKeeper 3.8 on port, its data in dir, and
// creates the node chroot, which also proves that it gives sessions.
// ZooKeeperTick is the tickTime of the ZooKeeper the cluster benches
// start: ZooKeeper's default, 2 s. A session expires at the first tick
// after its timeout, so a 6 s session of a killed broker ends 6-8 s after
// its last ping (BenchmarkManyPartitionsCluster's -many.zk-tick).
var ZooKeeperTick = 2 * time.Second

func startZooKeeper(ctx context.Context, dir string, port int, chroot string) (*process, error) {
	jar := "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("ZooKeeper is not installed (%s is missing): apt-get install zookeeper", jar)
	}
	cp := []string{jar}
	for _, extra := range []string{"/usr/share/java/zookeeper-jute.jar", "/usr/share/java/slf4j-simple.jar"} {
		if _, err := os.Stat(extra); err == nil {
			cp = append(cp, extra)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("tickTime=%d\ndataDir=%s/data\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"maxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n", ZooKeeperTick.Milliseconds(), dir, port)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	p, err := startProcess("zookeeper", filepath.Join(dir, "zookeeper.log"), nil, "java",
		"-Xmx256m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dzookeeper.admin.enableServer=false",
		"-cp", strings.Join(cp, ":"), "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	// ZooKeeper answers ruok a moment before it gives sessions: brokers
	// started then see their connections dropped, so the bench waits for
	// a session of its own.
	for !zkprobe.Ruok(addr) || createNode(addr, chroot) != nil {
		select {
		case <-p.done:
			return nil, p.failure(errors.New("exited before answering"))
		case <-ctx.Done():
			p.stop(10 * time.Second)
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop(10 * time.Second)
			return nil, p.failure(fmt.Errorf("no answer to ruok on %s within 60s", addr))
		}
	}
	return p, nil
}

// createNode creates path on the ZooKeeper at addr, if it gets a session
// within a few seconds.
func createNode(addr, path string) error {
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State != zk.StateHasSession {
				continue
			}
			_, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
			if errors.Is(err, zk.ErrNodeExists) {
				err = nil
			}
			return err
		case <-timeout:
			return errors.New("no ZooKeeper session within 5s")
		}
	}
}

// waitRegistered waits until ids 1..n are children of path on the
// ZooKeeper at addr, and otherwise returns the ids that are missing.
func waitRegistered(ctx context.Context, addr, path string, n int, within time.Duration) ([]int, error) {
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline := time.Now().Add(within)
	for {
		kids, _, err := conn.Children(path)
		var missing []int
		for id := 1; id <= n; id++ {
			if !slices.Contains(kids, strconv.Itoa(id)) {
				missing = append(missing, id)
			}
		}
		if err == nil && len(missing) == 0 {
			return nil, nil
		}
		if time.Now().After(deadline) {
			return missing, fmt.Errorf("brokers %v did not register in %s within %v (children %v, err %v)", missing, path, within, kids, err)
		}
		select {
		case <-ctx.Done():
			return missing, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// quietZK keeps the ZooKeeper client's reconnection chatter off the
// bench's output.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// startTributaryCluster runs ZooKeeper and ClusterNodes `tributary broker`
// processes with their default flush policy, each broker on its own port
// and data directory under dir/data. Every process is stopped by the
// returned server's stop, or here when the start fails.
func startTributaryCluster(ctx context.Context, cfg Config, dir string) (*server, error) {
	base, err := freePortRange(ClusterNodes + 1)
	if err != nil {
		return nil, err
	}
	const chroot = "/tributary-bench"
	zkProc, err := startZooKeeper(ctx, filepath.Join(dir, "zookeeper"), base+ClusterNodes, chroot)
	if err != nil {
		return nil, err
	}
	var (
		brokers []*process
		addrs   []string
		pids    []int
	)
	fail := func(err error) (*server, error) {
		stopAll(brokers, zkProc)
		return nil, err
	}
	connect := fmt.Sprintf("127.0.0.1:%d%s", base+ClusterNodes, chroot)
	for id := 1; id <= ClusterNodes; id++ {
		addr := fmt.Sprintf("127.0.0.1:%d", base+id-1)
		data := filepath.Join(dir, "data", fmt.Sprintf("b%d", id))
		if err := os.MkdirAll(data, 0o755); err != nil {
			return fail(err)
		}
		args := append([]string{"broker", "--id", fmt.Sprint(id), "--zookeeper", connect,
			"--data-dir", data, "--listen", addr}, cfg.TributaryArgs...)
		p, err := startProcess(fmt.Sprintf("tributary broker %d", id), filepath.Join(dir, fmt.Sprintf("broker-%d.log", id)),
			[]string{"TRIBUTARY_LOG=warn"}, cfg.TributaryBinary, args...)
		if err != nil {
			return fail(err)
		}
		brokers = append(brokers, p)
		addrs = append(addrs, addr)
		pids = append(pids, p.pid())
	}
	for i, p := range brokers {
		if err := waitListening(ctx, addrs[i], p.done, 30*time.Second); err != nil {
			return fail(p.failure(err))
		}
	}
	// A broker listens before it has joined the cluster: wait for every
	// one to register, and name the one that did not (with its log's last
	// lines), rather than let a row fail on a short broker list.
	zkAddr := fmt.Sprintf("127.0.0.1:%d", base+ClusterNodes)
	if missing, err := waitRegistered(ctx, zkAddr, chroot+"/brokers/ids", ClusterNodes, 90*time.Second); err != nil {
		for _, id := range missing {
			err = brokers[id-1].failure(err)
		}
		return fail(err)
	}
	return &server{
		addr:    strings.Join(addrs, ","),
		pid:     pids[0],
		pids:    append(pids, zkProc.pid()),
		dataDir: filepath.Join(dir, "data"),
		stop:    func() error { return stopAll(brokers, zkProc) },
	}, nil
}
