package testenv

import (
	"flag"
	"fmt"
	"testing"
)

// skipRecorder is a testing.TB that records a skip instead of ending the
// test, so the message itself can be checked.
type skipRecorder struct {
	testing.TB
	skipped string
}

func (r *skipRecorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
}

// withShort runs fn as if go test had -short (or not).
func withShort(t *testing.T, short bool, fn func()) {
	t.Helper()
	was := flag.Lookup("test.short").Value.String()
	if err := flag.Set("test.short", fmt.Sprint(short)); err != nil {
		t.Fatal(err)
	}
	defer flag.Set("test.short", was)
	fn()
}

func TestNeedsSkipsUnderShortSayingWhatTheTestStarts(t *testing.T) {
	r := &skipRecorder{TB: t}
	withShort(t, true, func() { Needs(r, ZooKeeper, JVM, Program("promtool")) })
	if want := "starts ZooKeeper, a JVM, promtool: skipped with -short (unit tests only)"; r.skipped != want {
		t.Fatalf("skipped with %q, want %q", r.skipped, want)
	}
	r = &skipRecorder{TB: t}
	withShort(t, false, func() { Needs(r, Kcat) })
	if r.skipped != "" {
		t.Fatalf("skipped without -short: %q", r.skipped)
	}
}

// TestStartersSkipUnderShort: a test that starts a service through
// testenv skips under -short even if it does not say so itself, before
// anything starts.
func TestStartersSkipUnderShort(t *testing.T) {
	for name, start := range map[string]func(t *testing.T){
		"StartZooKeeper":     func(t *testing.T) { StartZooKeeper(t) },
		"ZooKeeperAddr":      func(t *testing.T) { ZooKeeperAddr(t) },
		"StartCluster":       func(t *testing.T) { StartCluster(t, 1) },
		"StartHDFS":          func(t *testing.T) { StartHDFS(t) },
		"HDFSWarehouse":      func(t *testing.T) { HDFSWarehouse(t) },
		"StartHDFSHA":        func(t *testing.T) { StartHDFSHA(t) },
		"StartKerberized":    func(t *testing.T) { StartKerberizedHDFS(t) },
		"StartKerberizedInt": func(t *testing.T) { StartKerberizedHDFSIntegrity(t) },
		"RunKafkaTools":      func(t *testing.T) { RunKafkaTools(t, KafkaToolRun{Class: KafkaTopics}) },
		"StartKafkaConnect":  func(t *testing.T) { StartKafkaConnect(t, "127.0.0.1:1", "g", nil) },
		"StartKafkaStreams":  func(t *testing.T) { StartKafkaStreamsWordCount(t, "127.0.0.1:1", "a", "i", "o") },
		"Binary":             func(t *testing.T) { Binary(t) },
		"StartProcess":       func(t *testing.T) { StartProcess(t, "version") },
		"StartS3":            func(t *testing.T) { StartS3(t) },
		"S3Warehouse":        func(t *testing.T) { S3Warehouse(t) },
		"StartKafkaMember":   func(t *testing.T) { StartKafkaMember(t, "127.0.0.1:1", "g", "t", "classic", "m") },
	} {
		withShort(t, true, func() {
			t.Run(name, func(t *testing.T) {
				start(t)
				t.Errorf("%s returned under -short", name)
			})
		})
	}
}
