package loader_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// A `tributary load` stopped (SIGSTOP, lease renewals included, as a long
// GC pause or a stalled disk would) at its commit point, after its last
// lock check, for longer than its topic lease: another run takes the
// topic over, discards the stopped run's files and commits the same
// records. Resumed, the stopped run is refused by the commit itself, with
// an error naming the other run; nothing of it is left, and every record
// is in the warehouse exactly once.
func TestPausedLoaderIsFenced(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	env.CreateTopic(t, "paused", 2)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := loadertest.PageViews(0, n, 2, from, 3*time.Hour)
	env.Produce(t, "paused", loadertest.Schema(t, "pageview"), events)

	for _, kind := range []string{"local", "s3", "hdfs"} {
		t.Run(kind, func(t *testing.T) {
			url := warehouses(t)[kind](t)
			t.Setenv("TRIBUTARY_LOAD_STOP_AT", string(loader.FaultCommitPoint))
			p := testenv.StartProcess(t, "load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
				"--topics", "paused", "--warehouse", url, "--file-max-records", "500", "--lock-ttl", "2s", "--quiet")
			testenv.Eventually(t, 60*time.Second, "tributary load stops at its commit point", func() bool {
				select {
				case <-p.Done():
					t.Fatalf("tributary load exited before its commit point")
				default:
				}
				return strings.Contains(p.Output.String(), "stopping at "+string(loader.FaultCommitPoint)) && processStopped(p.Cmd.Process.Pid)
			})
			os.Unsetenv("TRIBUTARY_LOAD_STOP_AT")

			// Its lease runs out; this run takes the topic over.
			taker := runAfterExpiry(t, config(env, url, "paused"))
			if taker.Records != n || len(taker.Discarded) != 1 {
				t.Fatalf("the run taking over loaded %d records and discarded %v; want %d and the stopped run", taker.Records, taker.Discarded, n)
			}

			if err := p.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(60 * time.Second):
				t.Fatal("the resumed tributary load did not finish")
			}
			out := p.Output.String()
			if p.Cmd.ProcessState.ExitCode() == 0 {
				t.Fatalf("the resumed run exited 0; its output:\n%s", out)
			}
			if !strings.Contains(out, "not committing run "+taker.Discarded[0]) || !strings.Contains(out, "run "+taker.Run) {
				t.Errorf("the resumed run's error does not name the run that took over (%s):\n%s", taker.Run, out)
			}

			w := openWarehouse(t, url)
			c := loadertest.Read(t, w)
			loadertest.CheckExactlyOnce(t, c, "paused", events)
			for _, s := range c.State {
				if !isCommit(s) {
					t.Errorf("left behind: %s", s)
					continue
				}
				if data, err := warehouse.ReadFile(w, s); err != nil {
					t.Error(err)
				} else if strings.Contains(string(data), `"run": "`+taker.Discarded[0]+`"`) {
					t.Errorf("the stopped run committed: %s", s)
				}
			}
			if again := run(t, config(env, url, "paused")); again.Records != 0 || len(again.Discarded)+len(again.Recovered) != 0 {
				t.Errorf("the next run loaded %d records, discarded %v, recovered %v; want nothing to do", again.Records, again.Discarded, again.Recovered)
			}
		})
	}
}

// processStopped reports whether pid is stopped by a signal (state T in
// /proc/<pid>/stat).
func processStopped(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && slices.Contains([]byte{'T', 't'}, s[i+2])
}
