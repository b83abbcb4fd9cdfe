package loader_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// Three loaders given the same 12 topics of a local or an S3 warehouse, each starting `tributary load
// --share --max-topics 4` run after run (as three machines' schedulers
// would), every third run killed with SIGKILL at a random moment:
// no run exits with a lock error, every loader loads some of the records,
// and every record is in the warehouse exactly once.
func TestLoadersShareTopics(t *testing.T) {
	const topics, perTopic, loaders, runsEach = 12, 800, 3, 10
	env := loadertest.Start(t)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := map[string][]loadertest.Event{}
	var names []string
	for i := range topics {
		topic := fmt.Sprintf("sh%02d", i)
		names = append(names, topic)
		env.CreateTopic(t, topic, 2)
		events[topic] = loadertest.PageViews(0, perTopic, 2, from, 2*time.Hour)
		env.Produce(t, topic, loadertest.Schema(t, "pageview"), events[topic])
	}
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			shareTopics(t, env, warehouses(t)[kind](t), "sh[0-9]+", []string{"--max-topics", "4"}, names, events, loaders, runsEach)
		})
	}
}

// Three loaders given one topic of 12 partitions, each starting `tributary
// load --share --max-partitions 3` run after run, every third run killed:
// the loaders divide the one topic, and every record is loaded once.
func TestLoadersSharePartitions(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "bigshared", 12)
	events := map[string][]loadertest.Event{
		"bigshared": loadertest.PageViews(0, 9600, 12, time.Now().UTC().Truncate(time.Hour).Add(-3*time.Hour), 2*time.Hour),
	}
	env.Produce(t, "bigshared", loadertest.Schema(t, "pageview"), events["bigshared"])
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			shareTopics(t, env, warehouses(t)[kind](t), "bigshared", []string{"--max-partitions", "3"}, []string{"bigshared"}, events, 3, 10)
		})
	}
}

func shareTopics(t *testing.T, env *loadertest.Env, url, topics string, share, names []string, events map[string][]loadertest.Event, loaders, runsEach int) {
	args := append([]string{"load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL, "--topics", topics,
		"--warehouse", url, "--share", "--max-records", "800", "--file-max-records", "200",
		"--lock-ttl", "1s", "--json", "--quiet"}, share...)

	// Every run waits a moment before its commit, so that kills land
	// before, in and after commits alike.
	t.Setenv("TRIBUTARY_LOAD_DELAY_AT", string(loader.FaultBeforeCommit)+":300ms")
	var mu sync.Mutex
	loaded := make([]int64, loaders) // records of runs that ended by themselves, per loader
	kills := 0
	var wg sync.WaitGroup
	for id := range loaders {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
			for run := range runsEach {
				p := testenv.StartProcess(t, args...)
				if run%3 == 1 { // the same number of kills for each loader
					select {
					case <-p.Done():
					case <-time.After(time.Duration(50+rng.IntN(600)) * time.Millisecond):
						p.Kill()
						mu.Lock()
						kills++
						mu.Unlock()
						continue
					}
				}
				<-p.Done()
				out := p.Output.String()
				if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
					t.Errorf("loader %d run %d exited %d:\n%s", id, run, code, out)
					continue
				}
				var sum loader.Summary
				if err := json.Unmarshal([]byte(out[max(0, strings.Index(out, "{\n")):]), &sum); err != nil {
					t.Errorf("loader %d run %d: summary: %v\n%s", id, run, err, out)
					continue
				}
				mu.Lock()
				loaded[id] += sum.Records
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	os.Unsetenv("TRIBUTARY_LOAD_DELAY_AT")
	// What the killed runs left: one more run over every topic, once
	// their locks have expired.
	cfg := config(env, url, names...)
	cfg.LockTTL = time.Second
	last := runAfterExpiry(t, cfg)
	t.Logf("records loaded by each loader's runs that ended by themselves: %v; %d kills; the last run loaded %d", loaded, kills, last.Records)
	for id, n := range loaded {
		// How much each gets depends on how the scheduler starts the
		// processes; that each gets some is what sharing promises.
		if n == 0 {
			t.Errorf("loader %d loaded nothing: the work was not spread", id)
		}
	}
	c := loadertest.Read(t, openWarehouse(t, url))
	for _, topic := range names {
		loadertest.CheckExactlyOnce(t, c, topic, events[topic])
	}
}

// MaxTopics only means something to a sharing run: without Share it would
// leave topics unloaded with no word, so it is refused.
func TestMaxTopicsNeedsShare(t *testing.T) {
	cfg := loader.Config{Brokers: []string{"127.0.0.1:1"}, RegistryURL: "http://127.0.0.1:1", Topics: []string{"x"},
		Warehouse: "file://" + t.TempDir(), MaxTopics: 3, Logger: quiet}
	if _, err := loader.Run(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "sharing (Share, --share)") {
		t.Fatalf("MaxTopics without Share: %v", err)
	}
}

// A partition-sharing run holds no topic lock while it fetches, so a run
// loading the whole topic may commit its partitions meanwhile: the sharing
// run then refuses to commit (its partitions' offsets moved), the whole
// topic run leaves its live directory alone, and every record is loaded
// once.
func TestSharedPartitionsCommittedMeanwhileAreNotCommittedAgain(t *testing.T) {
	env := loadertest.Start(t)
	env.CreateTopic(t, "meanwhile", 4)
	events := loadertest.PageViews(0, 2000, 4, time.Now().UTC().Truncate(time.Hour).Add(-3*time.Hour), 2*time.Hour)
	env.Produce(t, "meanwhile", loadertest.Schema(t, "pageview"), events)
	url := "file://" + t.TempDir()
	whole := config(env, url, "meanwhile")
	var once sync.Once
	var wholeSum *loader.Summary
	var wholeErr error
	sharing := config(env, url, "meanwhile")
	sharing.Share, sharing.MaxPartitions = true, 4
	sharing.Fault = func(p loader.FaultPoint) error {
		if p == loader.FaultMidFetch {
			once.Do(func() { wholeSum, wholeErr = loader.Run(t.Context(), whole) })
		}
		return nil
	}
	sum, err := loader.Run(t.Context(), sharing)
	if wholeErr != nil || wholeSum.Records != 2000 {
		t.Fatalf("the whole-topic run: %v, %+v", wholeErr, wholeSum)
	}
	if len(wholeSum.Discarded) != 0 {
		t.Errorf("the whole-topic run deleted %v, a live run's directory", wholeSum.Discarded)
	}
	if err == nil || sum.Committed || !strings.Contains(err.Error(), "was committed by another run") {
		t.Fatalf("the sharing run: committed=%v, %v; want it refused", sum.Committed, err)
	}
	c := loadertest.Read(t, openWarehouse(t, url))
	loadertest.CheckExactlyOnce(t, c, "meanwhile", events)
	for _, s := range c.State {
		if !isCommit(s) {
			t.Errorf("left behind: %s", s)
		}
	}
}
