package loader_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/loadertest"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// plainReader follows the rule the README gives readers of the plain
// layout: list the layout outside _tributary; whatever is there is a whole
// file of a committed run. It checks, while loads run, that every data
// file it lists reads whole (an Avro container file to its end, a Parquet
// file from magic to magic) and that the files of a partition it sees at
// one time never overlap in offsets: no partial file and no duplicate is
// ever visible.
type plainReader struct {
	w    warehouse.FS
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	errs   []string
	passes int
}

func startPlainReader(t *testing.T, url string) *plainReader {
	t.Helper()
	r := &plainReader{w: openWarehouse(t, url), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			default:
			}
			r.pass()
			select { // a pace, not a wait for anything
			case <-r.stop:
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return r
}

// Stop ends the reader and fails the test with what it saw.
func (r *plainReader) Stop(t *testing.T) {
	t.Helper()
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.passes == 0 {
		t.Error("the reader never finished a pass over the warehouse")
	}
	for _, e := range r.errs {
		t.Error(e)
	}
	t.Logf("the reader made %d passes over the warehouse while loads ran", r.passes)
}

func (r *plainReader) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 20 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
}

type offsetRange struct {
	first, last int64
	name        string
}

func (r *plainReader) pass() {
	seen := map[string][]offsetRange{} // topic/partition → ranges
	var walk func(dir string) bool
	walk = func(dir string) bool {
		infos, err := r.w.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			return true
		}
		if err != nil {
			r.fail("listing %s: %v", dir, err)
			return false
		}
		for _, fi := range infos {
			p := path.Join(dir, fi.Name())
			switch {
			case dir == "." && !warehouse.IsTopicDir(fi.Name()):
			case fi.IsDir():
				if !walk(p) {
					return false
				}
			case strings.HasSuffix(p, ".avro") || strings.HasSuffix(p, ".parquet"):
				key, rng, ok := parseDataName(fi.Name())
				if !ok {
					r.fail("%s: not a data file name of the layout", p)
					continue
				}
				if err := readWhole(r.w, p); err != nil {
					r.fail("%s was visible but not whole: %v", p, err)
				}
				rng.name = p
				seen[key] = append(seen[key], rng)
			}
		}
		return true
	}
	if !walk(".") {
		return
	}
	for key, ranges := range seen {
		for i, a := range ranges {
			for _, b := range ranges[i+1:] {
				if a.first <= b.last && b.first <= a.last {
					r.fail("%s: %s and %s were visible at once with overlapping offsets", key, a.name, b.name)
				}
			}
		}
	}
	r.mu.Lock()
	r.passes++
	r.mu.Unlock()
}

// parseDataName reads topic.pP.FIRST-LAST.sID.ext.
func parseDataName(name string) (key string, rng offsetRange, ok bool) {
	parts := strings.Split(name, ".")
	n := len(parts)
	if n < 5 {
		return "", rng, false
	}
	a, b, found := strings.Cut(parts[n-3], "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if !found || err1 != nil || err2 != nil {
		return "", rng, false
	}
	return strings.Join(parts[:n-4], ".") + "/" + parts[n-4], offsetRange{first: first, last: last}, true
}

func readWhole(w warehouse.FS, p string) error {
	rc, err := w.Open(p)
	if err != nil {
		return err
	}
	defer rc.Close()
	if strings.HasSuffix(p, ".parquet") {
		b, err := io.ReadAll(rc)
		if err != nil {
			return err
		}
		if len(b) < 12 || !bytes.HasPrefix(b, []byte("PAR1")) || !bytes.HasSuffix(b, []byte("PAR1")) {
			return fmt.Errorf("%d bytes without Parquet's magic at both ends", len(b))
		}
		return nil
	}
	ocf, err := goavro.NewOCFReader(bufio.NewReader(rc))
	if err != nil {
		return err
	}
	for ocf.Scan() {
		if _, err := ocf.Read(); err != nil {
			return err
		}
	}
	return ocf.Err()
}

// Loads into a real S3-compatible store in both formats: every event
// exactly once (Avro read with goavro, Parquet with pyarrow after copying
// the objects out as they lie), nothing left of the runs but their
// manifests, and the audit's warehouse scan (audit count --warehouse)
// counting every event.
func TestS3LoadAvroAndParquet(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	events := map[string][]loadertest.Event{}
	for _, topic := range []string{"s3avro", "s3parquet"} {
		env.CreateTopic(t, topic, 3)
		events[topic] = loadertest.PageViews(0, n, 3, from, 2*time.Hour)
		env.Produce(t, topic, loadertest.Schema(t, "pageview"), events[topic])
	}
	url := testenv.S3Warehouse(t)
	reader := startPlainReader(t, url)

	avro := config(env, url, "s3avro")
	avro.FileMaxRecords = 400
	avro.MaxRecords = n / 2
	run(t, avro) // half, then the rest: the second continues from the first's offsets
	avro.MaxRecords = 0
	if sum := run(t, avro); sum.Records != n-n/2 {
		t.Errorf("second run loaded %d, want %d", sum.Records, n-n/2)
	}
	pq := config(env, url, "s3parquet")
	pq.Format, pq.FileMaxRecords = loader.FormatParquet, 500
	run(t, pq)
	reader.Stop(t)

	w := openWarehouse(t, url)
	c := loadertest.Read(t, w)
	loadertest.CheckExactlyOnce(t, c, "s3avro", events["s3avro"])
	for _, s := range c.State {
		if !isCommit(s) {
			t.Errorf("left behind: %s", s)
		}
	}
	dir := t.TempDir()
	copyOut(t, w, ".", dir)
	checkParquetExactlyOnce(t, dir, "s3parquet", events["s3parquet"])

	counts, _, err := audit.ScanWarehouse(context.Background(), audit.WarehouseScanConfig{FS: w, Topics: []string{"s3avro"}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := counts.Total(); got != n {
		t.Errorf("the audit's warehouse scan counted %d events, want %d", got, n)
	}
}

// SIGKILLs of `tributary load` into S3, loading an Avro topic and a
// Parquet topic by turns while a reader follows the plain layout: first a
// run stopped at each fault point in turn and killed there (so kills land
// in the writes, right before and right after the commit's conditional PUT,
// and between the moves), then runs killed at random moments (inside an
// upload, a copy, a request); then a last run of each: every event exactly
// once, and the reader never saw a partial file or an overlap.
func TestS3KillLoop(t *testing.T) {
	const n, atPoints, atRandom = 4000, 14, 8
	env := loadertest.Start(t)
	from := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	events := map[string][]loadertest.Event{}
	for _, topic := range []string{"s3kavro", "s3kparquet"} {
		env.CreateTopic(t, topic, 3)
		events[topic] = loadertest.PageViews(0, n, 3, from, 3*time.Hour)
		env.Produce(t, topic, loadertest.Schema(t, "pageview"), events[topic])
	}
	url := testenv.S3Warehouse(t)
	reader := startPlainReader(t, url)
	args := func(i int) []string {
		topic, format := "s3kavro", loader.FormatAvro
		if i%2 == 1 {
			topic, format = "s3kparquet", loader.FormatParquet
		}
		return []string{"load", "--brokers", env.Brokers[0], "--registry", env.RegistryURL,
			"--topics", topic, "--warehouse", url, "--format", format, "--max-records", "300",
			"--file-max-records", "100", "--lock-ttl", "1s", "--quiet"}
	}
	for i := range atPoints {
		point := loader.FaultPoints[(i/2)%len(loader.FaultPoints)]
		p := startLoad(t, string(point), args(i))
		if !strings.Contains(p.Output.String(), "paused at "+string(point)) {
			t.Fatalf("kill %d: tributary load exited before reaching %s:\n%s", i, point, p.Output.String())
		}
		p.Kill()
	}
	rng := rand.New(rand.NewPCG(31, uint64(time.Now().UnixNano())))
	for i := range atRandom {
		t.Setenv("TRIBUTARY_LOAD_DELAY_AT", string(loader.FaultPoints[rng.IntN(len(loader.FaultPoints))])+":1s")
		p := testenv.StartProcess(t, args(i)...)
		select {
		case <-p.Done(): // locked out by a killed run's lock, or done
		case <-time.After(time.Duration(100+rng.IntN(1500)) * time.Millisecond):
		}
		p.Kill()
	}
	os.Unsetenv("TRIBUTARY_LOAD_DELAY_AT")
	// The runs killed after their commit (or in its recovery's moves).
	if commits, err := openWarehouse(t, url).ReadDir("_tributary/commits"); err != nil || len(commits) < 2 {
		t.Errorf("before the last runs: %d commits (%v), want those of the runs killed after theirs", len(commits), err)
	}
	for _, topic := range []string{"s3kavro", "s3kparquet"} {
		cfg := config(env, url, topic)
		cfg.LockTTL = time.Second
		if topic == "s3kparquet" {
			cfg.Format = loader.FormatParquet
		}
		last := runAfterExpiry(t, cfg)
		t.Logf("%s: the last run loaded %d, recovered %v, discarded %v", topic, last.Records, last.Recovered, last.Discarded)
	}
	reader.Stop(t)
	w := openWarehouse(t, url)
	loadertest.CheckExactlyOnce(t, loadertest.Read(t, w), "s3kavro", events["s3kavro"])
	dir := t.TempDir()
	copyOut(t, w, ".", dir)
	checkParquetExactlyOnce(t, dir, "s3kparquet", events["s3kparquet"])
}

// Two loaders over the same topics of one S3 warehouse, each running load
// after load at the same time: the lease locks (conditional PUTs) let one
// run at a time load a topic, the other is told who holds it, and every
// event is in the warehouse exactly once.
func TestS3ConcurrentLoaders(t *testing.T) {
	const n = 3000
	env := loadertest.Start(t)
	from := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	topics := []string{"s3ca", "s3cb"}
	events := map[string][]loadertest.Event{}
	for _, topic := range topics {
		env.CreateTopic(t, topic, 2)
		events[topic] = loadertest.PageViews(0, n, 2, from, 2*time.Hour)
		env.Produce(t, topic, loadertest.Schema(t, "pageview"), events[topic])
	}
	url := testenv.S3Warehouse(t)
	reader := startPlainReader(t, url)
	var wg sync.WaitGroup
	var mu sync.Mutex
	committed, locked := map[int]int{}, 0
	for loaderID := range 2 {
		wg.Go(func() {
			cfg := config(env, url, topics...)
			cfg.MaxRecords, cfg.FileMaxRecords, cfg.Holder = 500, 200, fmt.Sprintf("loader %d", loaderID)
			for range 12 {
				sum, err := loader.Run(context.Background(), cfg)
				var le *warehouse.LockedError
				mu.Lock()
				switch {
				case err == nil:
					committed[loaderID]++
				case errors.As(err, &le):
					locked++
				default:
					t.Errorf("loader %d: %v", loaderID, err)
				}
				mu.Unlock()
				_ = sum
			}
		})
	}
	wg.Wait()
	cfg := config(env, url, topics...)
	runAfterExpiry(t, cfg)
	reader.Stop(t)
	t.Logf("runs committed per loader: %v; refused by a lock: %d", committed, locked)
	c := loadertest.Read(t, openWarehouse(t, url))
	for _, topic := range topics {
		loadertest.CheckExactlyOnce(t, c, topic, events[topic])
	}
}
