package bench

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A misspelt system fails the cluster run before anything starts, not
// after the first system's quarter of an hour.
func TestManyClusterUnknownSystem(t *testing.T) {
	work := t.TempDir()
	_, err := ManyCluster(context.Background(), ManyConfig{Systems: []string{"tributary", "kafak"}, WorkDir: work}, 3, 1)
	if err == nil || !strings.Contains(err.Error(), `"kafak"`) {
		t.Fatalf("ManyCluster with system kafak: err = %v, want one naming it", err)
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Errorf("ManyCluster wrote %d entries in its work directory before failing", len(ents))
	}
}

// pidGone must see a killed peer JVM as gone even while it is a zombie
// nobody has reaped: a child of the test not yet waited for is one.
func TestPidGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if pidGone(pid) {
		t.Fatalf("pidGone(%d) of a running sleep = true", pid)
	}
	cmd.Process.Kill()
	// Not waited for: a zombie once the kernel has delivered the signal.
	deadline := time.Now().Add(10 * time.Second)
	for !pidGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pidGone(%d) of a killed, unreaped sleep is still false after 10 s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Wait()
	if !pidGone(pid) {
		t.Errorf("pidGone(%d) of a reaped process = false", pid)
	}
}
