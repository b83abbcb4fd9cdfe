package loader_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// `tributary load` killed with a real SIGKILL, mid-write and mid-move, then
// run again: every event exactly once. The process stops itself at the
// point (TRIBUTARY_LOAD_PAUSE_AT) and the test kills it there.
func TestKillProcess(t *testing.T) {
	const n = 10000
	env := loadertest.Start(t)
	env.CreateTopic(t, "killed", 4)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 4, from, 3*time.Hour)
	env.Produce(t, "killed", loadertest.Schema(t, "pageview"), events)

	for _, point := range []loader.FaultPoint{loader.FaultMidWrite, loader.FaultMidMove} {
		t.Run(string(point), func(t *testing.T) {
			dir := t.TempDir()
			url := "file://" + dir
			t.Setenv("TRIBUTARY_LOAD_PAUSE_AT", string(point))
			p := testenv.StartProcess(t, "load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
				"--topics", "killed", "--warehouse", url, "--file-max-records", "300", "--lock-ttl", "2s", "--quiet")
			// StartProcess logs the output of a failed test.
			testenv.Eventually(t, 60*time.Second, "tributary load reaches "+string(point), func() bool {
				select {
				case <-p.Done():
					t.Fatalf("tributary load exited before reaching %s", point)
				default:
				}
				return strings.Contains(p.Output.String(), "paused at "+string(point))
			})
			p.Kill()
			if entries, _ := os.ReadDir(dir + "/_tributary/runs"); len(entries) == 0 {
				t.Fatal("the killed run left no run directory: it was not killed mid-run")
			}

			os.Unsetenv("TRIBUTARY_LOAD_PAUSE_AT")
			next := runAfterExpiry(t, config(env, url, "killed"))
			if point == loader.FaultMidMove && len(next.Recovered) != 1 {
				t.Errorf("killed mid-move: the next run recovered %v, want the killed run", next.Recovered)
			}
			if point == loader.FaultMidWrite && (len(next.Discarded) != 1 || next.Records != n) {
				t.Errorf("killed mid-write: the next run discarded %v and loaded %d, want the killed run discarded and %d loaded", next.Discarded, next.Records, n)
			}
			c := loadertest.Read(t, openWarehouse(t, url))
			loadertest.CheckExactlyOnce(t, c, "killed", events)
		})
	}
}
