package testenv

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
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
	cp, classes, err := miniHDFSClasspath()
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

// miniHDFSClasspath resolves the launcher's dependencies with Maven (once:
// the result is cached, keyed by the pom's contents) and compiles the
// launcher (once per launcher version). It returns the jar classpath and
// the directory holding MiniHDFS.class.
func miniHDFSClasspath() (cp, classes string, err error) {
	src := filepath.Join(repoRoot(), "scripts", "hdfs")
	pom, err := os.ReadFile(filepath.Join(src, "pom.xml"))
	if err != nil {
		return "", "", err
	}
	launcher, err := os.ReadFile(filepath.Join(src, "MiniHDFS.java"))
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(append(append([]byte{}, pom...), launcher...))
	cacheRoot, err := os.UserCacheDir()
	if err != nil {
		cacheRoot = os.TempDir()
	}
	cache := filepath.Join(cacheRoot, "tributary", "minihdfs-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", "", err
	}
	// Test binaries of several packages may start at once: one resolves,
	// the others wait for it.
	unlock, err := flock(filepath.Join(cache, ".lock"))
	if err != nil {
		return "", "", err
	}
	defer unlock()

	cpFile := filepath.Join(cache, "classpath.txt")
	classes = filepath.Join(cache, "classes")
	if b, err := os.ReadFile(cpFile); err == nil && jarsPresent(string(b)) {
		if _, err := os.Stat(filepath.Join(classes, "MiniHDFS.class")); err == nil {
			return strings.TrimSpace(string(b)), classes, nil
		}
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", "", fmt.Errorf("maven (mvn) is not installed, and is needed to fetch Hadoop's mini cluster; install it with: %s", hdfsInstallHint)
	}
	if _, err := exec.LookPath("javac"); err != nil {
		return "", "", fmt.Errorf("javac is not installed (a JDK is needed to compile scripts/hdfs/MiniHDFS.java); install it with: %s", hdfsInstallHint)
	}
	tmp := cpFile + ".tmp"
	mvn := exec.Command("mvn", "-B", "-q", "-f", filepath.Join(src, "pom.xml"),
		"dependency:build-classpath", "-Dmdep.outputFile="+tmp)
	if out, err := mvn.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("resolving the HDFS mini cluster with Maven (mvn dependency:build-classpath in scripts/hdfs): %v\n%s", err, out)
	}
	b, err := os.ReadFile(tmp)
	if err != nil {
		return "", "", err
	}
	cp = strings.TrimSpace(string(b))
	os.RemoveAll(classes)
	javac := exec.Command("javac", "-nowarn", "-cp", cp, "-d", classes, filepath.Join(src, "MiniHDFS.java"))
	if out, err := javac.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("compiling scripts/hdfs/MiniHDFS.java: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, cpFile); err != nil {
		return "", "", err
	}
	return cp, classes, nil
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
