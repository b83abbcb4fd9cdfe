package loader_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
)

// BenchmarkLoadShared loads 12 topics (120k page views) with one and with
// three `tributary load --share --max-topics 4` processes, each starting
// run after run until everything is loaded:
//
//	go test -run '^$' -bench BenchmarkLoadShared -benchtime 2x ./loader/
//
// On one machine of few cores three processes cannot go three times as
// fast, so besides records/s (wall clock) it reports records per CPU
// second of the loader processes (user + system): the work each process
// does for a record, which is what three machines would each do.
func BenchmarkLoadShared(b *testing.B) {
	const topics, perTopic = 12, 10_000
	env := loadertest.Start(b)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	for i := range topics {
		topic := fmt.Sprintf("bsh%02d", i)
		env.CreateTopic(b, topic, 2)
		env.Produce(b, topic, loadertest.Schema(b, "pageview"), loadertest.PageViews(0, perTopic, 2, from, 2*time.Hour))
	}
	testenv.Binary(b) // built outside the timing
	for _, loaders := range []int{1, 3} {
		b.Run(fmt.Sprintf("loaders=%d", loaders), func(b *testing.B) {
			var cpu time.Duration
			var records atomic.Int64
			runs := 0
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				url := "file://" + b.TempDir()
				args := []string{"load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL, "--topics", "bsh[0-9]+",
					"--warehouse", url, "--share", "--max-topics", "4", "--max-records", "20000", "--json", "--quiet"}
				done := atomic.Int64{}
				b.StartTimer()
				var wg sync.WaitGroup
				var mu sync.Mutex
				for range loaders {
					wg.Go(func() {
						for done.Load() < topics*perTopic {
							p := testenv.StartProcess(b, args...)
							<-p.Done()
							out := p.Output.String()
							var sum loader.Summary
							if err := json.Unmarshal([]byte(out[max(0, strings.Index(out, "{\n")):]), &sum); err != nil {
								b.Errorf("summary: %v\n%s", err, out)
								return
							}
							done.Add(sum.Records)
							records.Add(sum.Records)
							mu.Lock()
							cpu += p.Cmd.ProcessState.UserTime() + p.Cmd.ProcessState.SystemTime()
							runs++
							mu.Unlock()
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(records.Load())/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(records.Load())/cpu.Seconds(), "records/cpu-s")
			b.ReportMetric(float64(runs)/float64(b.N), "runs/op")
		})
	}
}
