package system_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// A dynamic-config file that does not parse stops the broker at start
// with a message naming the file and what to do; one that parses but holds
// a value no alter would have accepted is skipped with a warning, and the
// broker serves on its flags.
func TestDamagedDynamicConfigStore(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	dir := t.TempDir()
	file := filepath.Join(dir, "broker-configs.json")
	if err := os.WriteFile(file, []byte("{\"version\":1,\"default\":{\"log.retention.ms\":"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := testenv.RunStderr(t, 1, "standalone", "--data-dir", dir, "--listen", testenv.FreeAddr(t), "--registry-listen", "")
	if !strings.Contains(out, file) || !strings.Contains(out, "fix or remove the file") {
		t.Errorf("standalone on an unreadable %s said:\n%s", file, out)
	}

	if err := os.WriteFile(file, []byte(`{"version":1,"default":{"log.retention.ms":"-7x","log.dirs":"/elsewhere"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeAddr(t)
	p := testenv.StartProcess(t, "standalone", "--data-dir", dir, "--listen", addr, "--registry-listen", "")
	testenv.WaitListening(t, p, addr, 60*time.Second)
	testenv.Run(t, "a\n", 0, "produce", "--brokers="+addr, "--topic", "clicks")
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Output.String())
	}
	if log := p.Output.String(); strings.Count(log, "ignoring a stored dynamic broker config") != 2 {
		t.Errorf("want one warning for each bad stored setting:\n%s", log)
	}
}
