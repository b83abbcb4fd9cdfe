package testenv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds cmd/tributary once per test binary and returns its path.
// A test that asks for it runs a tributary process, so it skips under
// -short.
func Binary(t testing.TB) string {
	t.Helper()
	Needs(t, Tributary)
	buildOnce.Do(func() { binPath, buildErr = buildBinary() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// binKeep is how long a built binary no test has used is kept.
const binKeep = 24 * time.Hour

// buildBinary builds cmd/tributary into one directory under the system
// temp dir, named by the binary's content: the test processes of one tree
// share a copy, and copies unused for binKeep are removed. A directory per
// test process, never removed, filled a developer's disk at 66 MB a copy
// (500 copies in a day of test runs).
func buildBinary() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("tributary-bin-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	pruneBinaries(dir)
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	built := filepath.Join(tmp, "tributary")
	cmd := exec.Command("go", "build", "-o", built, "./cmd/tributary")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/tributary: %v\n%s", err, out)
	}
	b, err := os.ReadFile(built)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	final := filepath.Join(dir, "tributary-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(final); err == nil {
		now := time.Now()
		os.Chtimes(final, now, now) // in use: not pruned
		return final, nil
	}
	return final, os.Rename(built, final) // atomic: a racing process renames the same bytes
}

// pruneBinaries removes the binaries and leftover builds in dir not used
// for binKeep.
func pruneBinaries(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > binKeep {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Process is a `tributary` subcommand running as its own process.
type Process struct {
	Cmd    *exec.Cmd
	Output *SyncBuffer
	done   chan struct{}
}

// StartProcess runs `tributary args...`; it is killed at the end of the
// test if still running. Its combined output is kept in Output and logged
// if the test fails.
func StartProcess(t testing.TB, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting tributary %v: %v", args, err)
	}
	p := &Process{Cmd: cmd, Output: out, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("output of tributary %v:\n%s", args, out.String())
		}
	})
	return p
}

// Kill sends SIGKILL and waits for the process to end: no clean shutdown.
func (p *Process) Kill() {
	p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM and waits up to timeout for a graceful exit.
func (p *Process) Stop(timeout time.Duration) error {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("exit status %d", code)
		}
		return nil
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("no exit within %v of SIGTERM", timeout)
	}
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// FreeAddr returns a loopback address with a port that was free a moment
// ago, for processes that must be told their port. The port lies outside
// Linux's ephemeral range (see freePort), so no outgoing connection takes
// it before the process binds it.
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// WaitListening waits until addr accepts TCP connections or p exits.
func WaitListening(t testing.TB, p *Process, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("process exited before listening on %s:\n%s", addr, p.Output.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listening on %s after %v:\n%s", addr, timeout, p.Output.String())
}

// SyncBuffer is a bytes.Buffer safe for one side writing (a process, a
// logger on several goroutines) while a test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Run runs `tributary args...` with stdin and returns its stdout, failing
// the test if the exit status is not want.
func Run(t *testing.T, stdin string, want int, args ...string) string {
	t.Helper()
	out, _ := RunBoth(t, stdin, want, args...)
	return out
}

// RunStderr is Run for a command whose stderr (its error) is the point.
func RunStderr(t *testing.T, want int, args ...string) string {
	t.Helper()
	_, stderr := RunBoth(t, "", want, args...)
	return stderr
}

// RunBoth is Run returning stderr too.
func RunBoth(t *testing.T, stdin string, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tributary %v: %v", args, err)
	}
	if code != want {
		t.Fatalf("tributary %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, out, errBuf.String())
	}
	return string(out), errBuf.String()
}

// HasRow reports whether a table printed by a command has a line whose
// fields are those of row, however the columns are padded.
func HasRow(table, row string) bool {
	for _, l := range strings.Split(table, "\n") {
		if strings.Join(strings.Fields(l), " ") == row {
			return true
		}
	}
	return false
}
