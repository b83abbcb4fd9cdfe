package testenv

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// KafkaMember is scripts/kafka/GroupMember.java: one Apache Kafka 4.4
// consumer in a group, in its own JVM, with the group protocol the test
// chose (classic or consumer). It commits synchronously after each poll and
// on revocation, and reports each record and each change of assignment.
type KafkaMember struct {
	Name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	err   error

	mu       sync.Mutex
	records  []MemberRecord
	lines    []string // everything it printed, for failures
	owned    int      // how many partitions it owns (its last OWNS line)
	closed   bool
	problems []string // LOST and COMMITFAIL lines
}

// MemberRecord is one record a member consumed.
type MemberRecord struct {
	Partition int32
	Offset    int64
	Value     string
}

// StartKafkaMember starts a member named name of group, subscribed to
// topic, with group.protocol=protocol ("classic" or "consumer"). It is
// killed at the end of the test if still running.
func StartKafkaMember(t testing.TB, bootstrap, group, topic, protocol, name string) *KafkaMember {
	t.Helper()
	Needs(t, JVM)
	cp, classes, err := kafkaMember.classpath()
	if err != nil {
		t.Fatalf("Kafka's consumer: %v", err)
	}
	cmd := exec.Command("java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx128m",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", classes+string(os.PathListSeparator)+cp,
		"GroupMember", bootstrap, group, topic, protocol, name)
	m := &KafkaMember{Name: name, cmd: cmd, done: make(chan struct{})}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if m.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a Kafka consumer: %v (%s)", err, javaToolsInstallHint)
	}
	go func() {
		m.read(out)
		m.err = cmd.Wait()
		close(m.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-m.done
		if t.Failed() {
			m.mu.Lock()
			t.Logf("Kafka consumer %s printed:\n%s", name, tail(strings.Join(m.lines, "\n"), 6000))
			m.mu.Unlock()
		}
	})
	return m
}

func (m *KafkaMember) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m.mu.Lock()
		if !strings.HasPrefix(line, "REC ") {
			m.lines = append(m.lines, line)
		}
		switch f := strings.Fields(line); {
		case len(f) == 5 && f[0] == "REC":
			var r MemberRecord
			fmt.Sscan(f[2], &r.Partition)
			fmt.Sscan(f[3], &r.Offset)
			r.Value = f[4]
			m.records = append(m.records, r)
		case len(f) >= 3 && f[0] == "OWNS":
			fmt.Sscan(f[2], &m.owned)
		case len(f) >= 2 && (f[0] == "LOST" || f[0] == "COMMITFAIL"):
			m.problems = append(m.problems, line)
		case len(f) >= 1 && f[0] == "CLOSED":
			m.closed = true
		}
		m.mu.Unlock()
	}
}

// Records returns what the member consumed so far.
func (m *KafkaMember) Records() []MemberRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]MemberRecord(nil), m.records...)
}

// Assigned reports whether the member owns partitions now.
func (m *KafkaMember) Assigned() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned > 0
}

// Problems lists the partitions it lost without revoking them and the
// commits that failed: each one may mean records read twice.
func (m *KafkaMember) Problems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.problems...)
}

// Close asks the member to leave (its consumer commits and closes) and
// waits up to a minute for it to exit.
func (m *KafkaMember) Close() error {
	m.stdin.Close()
	select {
	case <-m.done:
	case <-time.After(time.Minute):
		m.cmd.Process.Kill()
		<-m.done
		return fmt.Errorf("the Kafka consumer %s did not close within a minute", m.Name)
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if m.err != nil || !closed {
		return fmt.Errorf("the Kafka consumer %s exited: %v (closed cleanly: %v)", m.Name, m.err, closed)
	}
	return nil
}

// kafkaMember builds and runs scripts/kafka/GroupMember.java on Kafka's
// clients (the tools' pom brings them).
var kafkaMember = javaLauncher{
	dir: "kafka", pom: "tools-pom.xml", main: "GroupMember",
	cacheName: "kafka-member-" + KafkaVersion, mvnArgs: []string{"-DincludeScope=runtime"},
	what: "Apache Kafka " + KafkaVersion + "'s consumer", installHint: javaToolsInstallHint,
}

// Kill ends the member with SIGKILL, as a crashed application: what it
// printed after its last commit was consumed but is not committed. It
// returns once everything the member printed has been read.
func (m *KafkaMember) Kill() {
	m.cmd.Process.Kill()
	<-m.done
}
