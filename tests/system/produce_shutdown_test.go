package system_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// `tributary produce --schema` sent SIGTERM while its stdin is still open
// and its brokers have stopped answering (the standalone process is
// frozen with SIGSTOP: connections are accepted, nothing is answered)
// stops reading stdin at once, exits within --shutdown-timeout, and names
// the audit counts it could not publish.
func TestProduceSIGTERMWithBrokersNotAnswering(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	addr, regAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	b := testenv.StartProcess(t, "standalone", "--data-dir", t.TempDir(), "--listen", addr, "--registry-listen", regAddr)
	testenv.WaitListening(t, b, regAddr, 60*time.Second)

	cmd := exec.Command(testenv.Binary(t), "produce", "--brokers", addr, "--registry", "http://"+regAddr, "--topic", "pageview",
		"--schema", filepath.Join("..", "..", "testdata", "schemas", "pageview.avsc"), "--server", "fe-1", "--shutdown-timeout", "2s")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	now := time.Now().UnixMilli()
	for i := range 5 {
		fmt.Fprintf(stdin, `{"header": {"time": %d}, "memberId": %d, "pageKey": "jobs"}`+"\n", now, i)
	}
	// The events are acknowledged; their window is still open, so their
	// counts wait for the shutdown to be published.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testenv.Eventually(t, 30*time.Second, "the events in the topic", func() bool {
		ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "pageview")
		o, ok := ends.Lookup("pageview", 0)
		return err == nil && ok && o.Offset >= 5
	})
	b.Cmd.Process.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { b.Cmd.Process.Signal(syscall.SIGCONT) })

	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("tributary produce still running 10 s after SIGTERM (--shutdown-timeout 2s):\n%s", stderr.String())
	}
	took := time.Since(start)
	if took > 3500*time.Millisecond {
		t.Errorf("tributary produce exited %v after SIGTERM, want within --shutdown-timeout 2s (and a margin)", took.Round(time.Millisecond))
	}
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(stderr.String(), "audit counts NOT published: topic pageview, window ") ||
		!strings.Contains(stderr.String(), ": 5 events") {
		t.Errorf("exit %d; want a failure naming the 5 events' unpublished counts:\n%s", cmd.ProcessState.ExitCode(), stderr.String())
	}
}
