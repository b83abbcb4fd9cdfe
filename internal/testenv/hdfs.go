package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hdfsInstallHint is what a developer must run when Java or Maven is
// missing; HDFS tests never skip.
const hdfsInstallHint = "./scripts/install-deps.sh (or: apt-get install -y maven default-jdk-headless)"

type hdfsCluster struct {
	addr  string
	stdin io.WriteCloser // closing it (or this process dying) stops the cluster
}

var (
	hdfsOnce   sync.Once
	hdfsShared *hdfsCluster
	hdfsErr    error
	hdfsSeq    atomic.Int64
)

// StartHDFS returns the address (127.0.0.1:port) of the NameNode of a real
// HDFS: Hadoop's mini cluster (org.apache.hadoop:hadoop-client-minicluster,
// one NameNode and one DataNode in one JVM), started by the launcher in
// scripts/hdfs. One cluster serves the whole test binary, because it takes
// ~15s to start; tests keep apart by using their own directory (see
// HDFSWarehouse). The cluster stops, and its files are removed, when the
// test binary exits however it exits.
//
// The first run downloads the cluster's jars with Maven into ~/.m2 (about
// 100 MB); later runs reuse them, and the resolved classpath is cached in
// the user cache directory.
func StartHDFS(t testing.TB) string {
	t.Helper()
	hdfsOnce.Do(func() { hdfsShared, hdfsErr = startHDFS() })
	if hdfsErr != nil {
		t.Fatalf("starting HDFS: %v", hdfsErr)
	}
	return hdfsShared.addr
}

// HDFSWarehouse returns an hdfs:// URL of a directory of its own for this
// test on the shared mini cluster.
func HDFSWarehouse(t testing.TB) string {
	t.Helper()
	addr := StartHDFS(t)
	return fmt.Sprintf("hdfs://%s/test/%s-%d", addr, chrootName(t.Name()), hdfsSeq.Add(1))
}

func startHDFS() (*hdfsCluster, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java is not installed; install it with: %s", hdfsInstallHint)
	}
	cp, classes, err := miniHDFS.classpath()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tributary-hdfs-")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "minihdfs.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(java,
		"-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.net.preferIPv4Stack=true",
		"-cp", classes+string(os.PathListSeparator)+cp,
		"MiniHDFS", dir) // removes dir, log included, when it stops
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Its own process group: a Ctrl-C of `go test` reaches the test binary,
	// which then closes stdin; the JVM shuts the cluster down by itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the HDFS mini cluster: %w", err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "MINIHDFS READY "); ok {
				ready <- addr
			}
		}
		close(ready)
	}()
	go cmd.Wait()
	select {
	case addr, ok := <-ready:
		if !ok {
			return nil, fmt.Errorf("the HDFS mini cluster exited before it was ready; its log (%s):\n%s", logPath, logTail(logPath))
		}
		return &hdfsCluster{addr: addr, stdin: stdin}, nil
	case <-time.After(3 * time.Minute):
		stdin.Close()
		cmd.Process.Kill()
		return nil, fmt.Errorf("the HDFS mini cluster was not ready within 3 minutes; its log (%s):\n%s", logPath, logTail(logPath))
	}
}

// miniHDFS starts Hadoop's mini cluster (scripts/hdfs).
var miniHDFS = javaLauncher{
	dir: "hdfs", pom: "pom.xml", main: "MiniHDFS", cacheName: "minihdfs",
	what: "Hadoop's HDFS mini cluster", installHint: hdfsInstallHint,
}

func jarsPresent(cp string) bool {
	cp = strings.TrimSpace(cp)
	if cp == "" {
		return false
	}
	for _, jar := range strings.Split(cp, string(os.PathListSeparator)) {
		if _, err := os.Stat(jar); err != nil {
			return false
		}
	}
	return true
}

// flock takes an exclusive advisory lock on path, waiting for it.
func flock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, errors.Join(errors.New("locking the mini cluster cache"), err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
