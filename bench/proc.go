package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// diskUsage is the space dir's files take on disk (allocated blocks, as du
// counts them), so preallocated sparse files count for what they hold.
func diskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a segment deleted while we walk
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		}
		return nil
	})
	return total, err
}

// peakRSSKiB reads a process's peak resident set size (VmHWM).
func peakRSSKiB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("pid %d: no VmHWM in /proc status", pid)
}

// freePortRange finds n consecutive loopback ports that are free now. It
// looks below Linux's ephemeral range (32768 and up by default), where the
// outgoing connections of everything else running cannot take a port
// between this check and the process that binds it.
func freePortRange(n int) (int, error) {
	for range 200 {
		base := 20000 + rand.IntN(32768-20000-n)
		ok := true
		for p := base; p < base+n && ok; p++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no free range of loopback ports")
}

func waitListening(ctx context.Context, addr string, done <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("exited before listening on %s", addr)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listening on %s after %v", addr, timeout)
}

// startTributary runs `tributary standalone` with its default flush policy.
func startTributary(ctx context.Context, cfg Config, dir string) (*server, error) {
	port, err := freePortRange(1)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	// The bench measures the broker: no schema registry (whose fixed
	// default port would also collide with anything else on 8081).
	args := append([]string{"standalone", "--data-dir", data, "--listen", addr, "--registry-listen="}, cfg.TributaryArgs...)
	p, err := startProcess("tributary", filepath.Join(dir, "tributary.log"), []string{"TRIBUTARY_LOG=warn"}, cfg.TributaryBinary, args...)
	if err != nil {
		return nil, err
	}
	stop := func() error { return p.stop(30 * time.Second) }
	if err := waitListening(ctx, addr, p.done, 30*time.Second); err != nil {
		stop()
		return nil, p.failure(err)
	}
	return &server{addr: addr, pid: p.pid(), pids: []int{p.pid()}, dataDir: data, stop: stop}, nil
}

// startPeer starts a peer with scripts/bench/peer.sh, which knows how each
// one is configured; see its header for the contract.
// A peer of nodes nodes takes clients on every other port from its base
// (see peer.sh).
func startPeer(name string, nodes int) func(ctx context.Context, cfg Config, dir string) (*server, error) {
	return startPeerOn(name, nodes, 0)
}

// startPeerOn is startPeer on the given base port (0: a free one).
func startPeerOn(name string, nodes, port int) func(ctx context.Context, cfg Config, dir string) (*server, error) {
	return func(ctx context.Context, cfg Config, dir string) (*server, error) {
		script, err := peerScript(cfg.Scripts)
		if err != nil {
			return nil, err
		}
		port := port
		if port == 0 {
			if port, err = freePortRange(max(3, 2*nodes)); err != nil {
				return nil, err
			}
		}
		stop := func() error {
			c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			out, err := exec.CommandContext(c, "bash", script, "stop", name, dir).CombinedOutput()
			if err != nil {
				return fmt.Errorf("peer.sh stop %s: %v\n%s", name, err, lastLines(out, 5))
			}
			return nil
		}
		c, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(c, "bash", script, "start", name, dir, strconv.Itoa(port))
		cmd.Env = append(os.Environ(), cfg.PeerEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			stop()
			return nil, fmt.Errorf("%s\n%s", lastLines(out, 4), err)
		}
		pidText, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			stop()
			return nil, err
		}
		var pids []int
		for _, f := range strings.Fields(string(pidText)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				stop()
				return nil, fmt.Errorf("pid file: %w", err)
			}
			pids = append(pids, pid)
		}
		if len(pids) != max(1, nodes) {
			stop()
			return nil, fmt.Errorf("pid file: %d pids for %d nodes", len(pids), nodes)
		}
		var addrs []string
		for i := range max(1, nodes) {
			addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port+2*i))
		}
		return &server{addr: strings.Join(addrs, ","), pid: pids[0], pids: pids, dataDir: filepath.Join(dir, "data"), stop: stop}, nil
	}
}

// peerScript is the absolute path of peer.sh in the scripts directory.
func peerScript(scripts string) (string, error) {
	script, err := filepath.Abs(filepath.Join(scripts, "peer.sh"))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("%s: %w (run from the repository root, or pass the scripts directory)", script, err)
	}
	return script, nil
}

// restartPeerNode starts node n (1 to 3) of the three-node peer name that
// startPeerOn started in dir on port again, on its data, and returns its
// new pid once it takes connections.
func restartPeerNode(ctx context.Context, cfg Config, name, dir string, port, n int) (int, error) {
	script, err := peerScript(cfg.Scripts)
	if err != nil {
		return 0, err
	}
	c, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, "bash", script, "start-node", name, dir, strconv.Itoa(port), strconv.Itoa(n))
	cmd.Env = append(os.Environ(), cfg.PeerEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("peer.sh start-node %s %d: %v\n%s", name, n, err, lastLines(out, 4))
	}
	pidText, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		return 0, err
	}
	pids := strings.Fields(string(pidText))
	if len(pids) < n {
		return 0, fmt.Errorf("%s/pid: %d pids, no node %d", dir, len(pids), n)
	}
	pid, err := strconv.Atoi(pids[n-1])
	if err != nil {
		return 0, fmt.Errorf("%s/pid: %w", dir, err)
	}
	return pid, nil
}

// pidGone reports whether process pid has exited: it no longer exists, or
// is a zombie its new parent (a peer's JVM outlives the script that
// started it) has not reaped yet.
func pidGone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
