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
// missing; HDFS tests fail rather than skip (except under -short).
const hdfsInstallHint = "./scripts/install-deps.sh (or: apt-get install -y maven default-jdk-headless)"

// HDFSCluster is a running HDFS mini cluster.
type HDFSCluster struct {
	// Addr is the host:port of the NameNode that was active at start.
	Addr string
	// ConfDir holds the client configuration (core-site.xml,
	// hdfs-site.xml) a cluster's administrator would hand out: fs.defaultFS,
	// and the nameservice or the security settings.
	ConfDir string
	// Nameservice is the HA cluster's logical name (hdfs://tributary-ns/...);
	// empty for a cluster of one NameNode.
	Nameservice string
	// Kerberos (StartKerberizedHDFS): the KDC's krb5.conf and realm, a
	// keytab of the principal tributary@Realm, and a stale one (keys from
	// before a rotation, which the KDC refuses).
	Krb5Conf, Realm, Keytab, StaleKeytab string

	stdin   io.WriteCloser // closing it (or this process dying) stops the cluster
	replies chan string    // answers to commands
	mu      sync.Mutex     // one command at a time
}

var (
	hdfsOnce   sync.Once
	hdfsShared *HDFSCluster
	hdfsErr    error
	hdfsSeq    atomic.Int64

	hdfsHAOnce  sync.Once
	hdfsHA      *HDFSCluster
	hdfsHAErr   error
	hdfsKrbOnce sync.Once
	hdfsKrb     *HDFSCluster
	hdfsKrbErr  error
	hdfsIntOnce sync.Once
	hdfsInt     *HDFSCluster
	hdfsIntErr  error
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
	Needs(t, HDFS, JVM)
	hdfsOnce.Do(func() { hdfsShared, hdfsErr = startHDFS() })
	if hdfsErr != nil {
		t.Fatalf("starting HDFS: %v", hdfsErr)
	}
	return hdfsShared.Addr
}

// HDFSWarehouse returns an hdfs:// URL of a directory of its own for this
// test on the shared mini cluster.
func HDFSWarehouse(t testing.TB) string {
	t.Helper()
	addr := StartHDFS(t)
	return fmt.Sprintf("hdfs://%s/test/%s-%d", addr, chrootName(t.Name()), hdfsSeq.Add(1))
}

// StartHDFSHA returns a mini cluster with two NameNodes behind the
// nameservice tributary-ns (one DataNode), shared by the test binary like
// StartHDFS's. Failover switches the active NameNode.
func StartHDFSHA(t testing.TB) *HDFSCluster {
	t.Helper()
	Needs(t, HDFS, JVM)
	hdfsHAOnce.Do(func() { hdfsHA, hdfsHAErr = startHDFS("-ha") })
	if hdfsHAErr != nil {
		t.Fatalf("starting HDFS with two NameNodes: %v", hdfsHAErr)
	}
	return hdfsHA
}

// StartKerberizedHDFS returns a mini cluster secured by Kerberos, with a
// real KDC (Hadoop's MiniKdc) and dfs.data.transfer.protection privacy
// (SASL with encryption between client and DataNode), shared by the test
// binary. Like StartHDFSHA's, it has two NameNodes behind the nameservice
// tributary-ns: production clusters are both secured and highly available.
func StartKerberizedHDFS(t testing.TB) *HDFSCluster {
	t.Helper()
	Needs(t, HDFS, JVM)
	hdfsKrbOnce.Do(func() { hdfsKrb, hdfsKrbErr = startHDFS("-ha", "-kerberos", "-protection", "privacy") })
	if hdfsKrbErr != nil {
		t.Fatalf("starting a Kerberized HDFS: %v", hdfsKrbErr)
	}
	return hdfsKrb
}

// StartKerberizedHDFSIntegrity is StartKerberizedHDFS with one NameNode
// and dfs.data.transfer.protection integrity: every DataNode exchange
// signed (SASL with an HMAC a frame), not encrypted.
func StartKerberizedHDFSIntegrity(t testing.TB) *HDFSCluster {
	t.Helper()
	Needs(t, HDFS, JVM)
	hdfsIntOnce.Do(func() { hdfsInt, hdfsIntErr = startHDFS("-kerberos", "-protection", "integrity") })
	if hdfsIntErr != nil {
		t.Fatalf("starting a Kerberized HDFS with integrity: %v", hdfsIntErr)
	}
	return hdfsInt
}

// Warehouse returns an hdfs:// URL of a directory of its own for this test
// on c, naming the nameservice if c has one.
func (c *HDFSCluster) Warehouse(t testing.TB) string {
	host := c.Addr
	if c.Nameservice != "" {
		host = c.Nameservice
	}
	return fmt.Sprintf("hdfs://%s/test/%s-%d", host, chrootName(t.Name()), hdfsSeq.Add(1))
}

// Failover makes the active NameNode of an HA cluster standby and the
// other one active, as an administrator's hdfs haadmin -failover does, and
// returns the address of the newly active one. It may be called from any
// goroutine (a loader's fault hook, say).
func (c *HDFSCluster) Failover() (string, error) { return c.command("failover") }

// Crash stops the active NameNode of an HA cluster dead, cutting its
// connections (calls in flight fail), makes the other one active, and
// restarts the dead one as standby; it returns the newly active one's
// address.
func (c *HDFSCluster) Crash() (string, error) { return c.command("crash") }

// Standby makes the active NameNode of an HA cluster standby, leaving none
// active until Activate: a failover that takes its time.
func (c *HDFSCluster) Standby() error {
	_, err := c.command("standby")
	return err
}

// Activate ends a Standby, making the other NameNode active, and returns
// its address.
func (c *HDFSCluster) Activate() (string, error) { return c.command("activate") }

func (c *HDFSCluster) command(cmd string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.stdin, cmd+"\n"); err != nil {
		return "", fmt.Errorf("mini cluster command %s: %w", cmd, err)
	}
	select {
	case r := <-c.replies:
		f := strings.Fields(r)
		if len(f) != 3 || f[0] != "ACTIVE" {
			return "", fmt.Errorf("mini cluster command %s: answered %q", cmd, r)
		}
		return f[2], nil
	case <-time.After(2 * time.Minute):
		return "", fmt.Errorf("mini cluster command %s: no answer within 2 minutes", cmd)
	}
}

func startHDFS(args ...string) (*HDFSCluster, error) {
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
	cmd := exec.Command(java, append([]string{
		"-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.net.preferIPv4Stack=true",
		"-cp", classes + string(os.PathListSeparator) + cp,
		"MiniHDFS", dir}, args...)...) // removes dir, log included, when it stops
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
	c := &HDFSCluster{stdin: stdin, replies: make(chan string, 1)}
	if len(args) > 0 && args[0] == "-ha" {
		c.Nameservice = "tributary-ns"
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "MINIHDFS ")
			if !ok {
				continue
			}
			f := strings.Fields(line)
			switch {
			case f[0] == "KDC" && len(f) == 5:
				c.Krb5Conf, c.Realm, c.Keytab, c.StaleKeytab = f[1], f[2], f[3], f[4]
			case f[0] == "READY" && len(f) == 3:
				c.Addr, c.ConfDir = f[1], f[2]
				ready <- true
			default:
				c.replies <- line
			}
		}
		close(ready)
	}()
	go cmd.Wait()
	select {
	case _, ok := <-ready:
		if !ok {
			return nil, fmt.Errorf("the HDFS mini cluster exited before it was ready; its log (%s):\n%s", logPath, logTail(logPath))
		}
		return c, nil
	case <-time.After(4 * time.Minute):
		stdin.Close()
		cmd.Process.Kill()
		return nil, fmt.Errorf("the HDFS mini cluster was not ready within 4 minutes; its log (%s):\n%s", logPath, logTail(logPath))
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
