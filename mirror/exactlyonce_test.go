package mirror_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/consumer"
	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// The exactly-once tests compare the target with the source record by
// record: the target partition must hold the source partition's records,
// each once, in source order, with key, body, timestamp and headers
// identical, the schema id translated, and the origin hop naming the
// source offset.

// mirrorProcess runs `tributary mirror` from a source given by its
// brokers, as its own process so that it can be killed with SIGKILL.
func mirrorProcess(t *testing.T, name, source, target string, extra ...string) (*testenv.Process, string) {
	t.Helper()
	status := testenv.FreeAddr(t)
	args := append([]string{"mirror",
		"--source", name + "=" + source,
		"--target", target,
		"--session-timeout", "6s",
		"--log-interval", "1s",
		"--status", status,
	}, extra...)
	p := testenv.StartProcess(t, args...)
	testenv.WaitListening(t, p, status, 30*time.Second)
	return p, status
}

// envelope frames body as a Confluent envelope with schema id id.
func envelope(id int, body []byte) []byte {
	out := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, body...)
}

// liveProducer writes test records (enveloped with schema id id when id >
// 0) to every partition of topic, idempotently and in order, until stop is
// called; stop returns how many records each partition got.
func liveProducer(t *testing.T, addr, cluster, topic string, partitions int32, id int) (stop func() map[int32]int) {
	t.Helper()
	cl := newClient(t, []string{addr}, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	counts := map[int32]int{}
	var mu sync.Mutex
	var failed error
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			for p := range partitions {
				r := testRecord(cluster, topic, p, i)
				if id > 0 {
					r.Value = envelope(id, r.Value)
				}
				cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						failed = err
					}
				})
			}
			mu.Lock()
			for p := range partitions {
				counts[p] = i + 1
			}
			mu.Unlock()
			time.Sleep(5 * time.Millisecond) // about 1,500 records/s

		}
	})
	return func() map[int32]int {
		cancel()
		wg.Wait()
		fctx, fcancel := context.WithTimeout(context.Background(), time.Minute)
		defer fcancel()
		if err := cl.Flush(fctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if failed != nil {
			t.Fatalf("producing to the source: %v", failed)
		}
		return counts
	}
}

// checkExactCopy checks that every target partition holds exactly the
// records of the same source partition, in order, each once; srcID and
// dstID are the schema ids in source and target (0: values are not
// enveloped).
func checkExactCopy(t *testing.T, source, target map[int32][]*kgo.Record, name string, srcID, dstID int) {
	t.Helper()
	for p, want := range source {
		got := target[p]
		for i, r := range got {
			if i >= len(want) {
				t.Fatalf("target partition %d holds %d records, the source %d: %d extra (duplicates?), the first %q with origin %v",
					p, len(got), len(want), len(got)-len(want), r.Value, r.Headers)
			}
			w := want[i]
			origin := fmt.Sprintf("%s/%d/%d", name, p, w.Offset)
			if h := r.Headers[len(r.Headers)-1]; h.Key != mirror.OriginHeader || string(h.Value) != origin {
				t.Fatalf("target %d@%d: origin %v, want %s: a record is repeated or missing", p, r.Offset, r.Headers, origin)
			}
			wantValue := w.Value
			if srcID > 0 {
				if id := int(binary.BigEndian.Uint32(w.Value[1:5])); id != srcID {
					t.Fatalf("source %d@%d: schema id %d, want %d", p, w.Offset, id, srcID)
				}
				wantValue = envelope(dstID, w.Value[5:])
			}
			if !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, wantValue) || !r.Timestamp.Equal(w.Timestamp) ||
				len(r.Headers) != len(w.Headers)+1 || string(r.Headers[0].Value) != string(w.Headers[0].Value) {
				t.Fatalf("target %d@%d differs from source %d@%d: key %q/%q value %q/%q", p, r.Offset, p, w.Offset, r.Key, w.Key, r.Value, wantValue)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("target partition %d holds %d records, the source %d: records %d.. missing", p, len(got), len(want), len(got))
		}
	}
}

// registries starts a registry per datacenter and registers one schema in
// the source's, making sure the target gives the same schema another id.
func registries(t *testing.T, subject string) (srcURL, dstURL string, srcID int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srcReg, srcURL := startRegistry(t)
	dstReg, dstURL := startRegistry(t)
	for i := range 2 {
		s := fmt.Sprintf(`{"type":"record","name":"Other%d","fields":[{"name":"x","type":"long"}]}`, i)
		if _, err := dstReg.CreateSchema(ctx, fmt.Sprintf("other%d-value", i), sr.Schema{Schema: s}); err != nil {
			t.Fatal(err)
		}
	}
	ss, err := srcReg.CreateSchema(ctx, subject, sr.Schema{Schema: `{"type":"record","name":"Click","fields":[{"name":"page","type":"string"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	return srcURL, dstURL, ss.ID
}

// SIGKILL of the mirror at 20 random moments while a producer writes to
// every partition of a standalone Tributary source reached by its brokers:
// the target ends up with every record exactly once, in order, bytes
// identical, schema ids translated. (The mirror before origin hops and
// resume-from-target duplicated what it copied after its last commit.)
func TestMirrorExactlyOnceUnderSIGKILL(t *testing.T) {
	const (
		topic      = "clicks"
		partitions = 8
		kills      = 20
	)
	needServices(t)
	testenv.Binary(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	createTopic(t, []string{src.Addr}, topic, partitions)
	srcURL, dstURL, srcID := registries(t, topic+"-value")
	stop := liveProducer(t, src.Addr, "dc1", topic, partitions, srcID)
	args := []string{"--source-registry", "dc1=" + srcURL, "--target-registry", dstURL, "--instance-id", "m1"}
	for k := range kills {
		p, status := mirrorProcess(t, "dc1", src.Addr, dst.Addr, args...)
		// Half the kills hit a mirror that is still starting (joining,
		// reading the tails), half one that is copying.
		if k%2 == 1 {
			testenv.Eventually(t, time.Minute, "the mirror copies", func() bool {
				st, err := fetchStatus(t, status)
				return err == nil && len(st.Sources) == 1 && len(st.Sources[0].Partitions) == partitions
			})
		}
		time.Sleep(time.Duration(rand.IntN(800)) * time.Millisecond)
		p.Kill()
		if k == kills-1 {
			t.Logf("killed %d times; the target holds %d records", kills, total(t, dst.Addr, topic))
		}
	}
	counts := stop()
	p, _ := mirrorProcess(t, "dc1", src.Addr, dst.Addr, args...)
	var n int64
	for _, c := range counts {
		n += int64(c)
	}
	waitForCount(t, []string{dst.Addr}, topic, n, 2*time.Minute)
	time.Sleep(500 * time.Millisecond) // anything more would be a duplicate: let it land
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("mirror did not stop cleanly: %v\n%s", err, p.Output.String())
	}
	dstID := schemaID(t, dstURL, topic+"-value")
	checkExactCopy(t, readTopic(t, []string{src.Addr}, topic), readTopic(t, []string{dst.Addr}, topic), "dc1", srcID, dstID)
	t.Logf("%d kill -9s under a live producer: %d records, each exactly once, in order; schema id %d became %d", kills, n, srcID, dstID)
}

func total(t *testing.T, addr, topic string) int64 {
	n, _ := endOffsets(t, newClient(t, []string{addr}), topic)
	return n
}

// schemaID is the id of a subject's latest version.
func schemaID(t *testing.T, url, subject string) int {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.SchemaByVersion(context.Background(), subject, -1)
	if err != nil {
		t.Fatal(err)
	}
	return ss.ID
}

// bootstrapSource is a standalone Tributary source reached by its brokers.
func bootstrapSource(name string, b *testenv.Broker) mirror.Source {
	return mirror.Source{Name: name, Bootstrap: []string{b.Addr}}
}

// A mirror pointed at a new target with an old mirror's settings (same
// group) copies everything: where a copy resumes comes from the target,
// and this target holds nothing.
func TestMirrorNewTargetCopiesEverything(t *testing.T) {
	const topic, partitions, perPart = "views", 4, 500
	needServices(t)
	src := testenv.StartBroker(t)
	createTopic(t, []string{src.Addr}, topic, partitions)
	produce(t, []string{src.Addr}, "dc1", topic, partitions, 0, perPart)
	source := readTopic(t, []string{src.Addr}, topic)
	for _, name := range []string{"first", "second"} {
		dst := testenv.StartBroker(t)
		_, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{bootstrapSource("dc1", src)}, Target: []string{dst.Addr}})
		waitForCount(t, []string{dst.Addr}, topic, partitions*perPart, time.Minute)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		checkExactCopy(t, source, readTopic(t, []string{dst.Addr}, topic), "dc1", 0, 0)
		t.Logf("%s target: every record copied once", name)
	}
}

// Stopped and started again, a mirror copies only what the source got in
// between, and says where it resumed.
func TestMirrorRestartCopiesOnlyWhatIsNew(t *testing.T) {
	const topic, partitions, perPart = "views", 4, 500
	needServices(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	createTopic(t, []string{src.Addr}, topic, partitions)
	cfg := mirror.Config{Sources: []mirror.Source{bootstrapSource("dc1", src)}, Target: []string{dst.Addr}}
	for run := range 3 {
		produce(t, []string{src.Addr}, "dc1", topic, partitions, run*perPart, (run+1)*perPart)
		m, stop := runMirror(t, cfg)
		waitForCount(t, []string{dst.Addr}, topic, int64((run+1)*partitions*perPart), time.Minute)
		for _, p := range m.Status().Sources[0].Partitions {
			if p.Resumed != int64(run*perPart) {
				t.Fatalf("run %d: partition %d resumed at %d, want %d", run+1, p.Partition, p.Resumed, run*perPart)
			}
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	checkExactCopy(t, readTopic(t, []string{src.Addr}, topic), readTopic(t, []string{dst.Addr}, topic), "dc1", 0, 0)
}

// A target topic with fewer partitions than the source: records go by key
// hash, so one source partition feeds every target partition and their
// acknowledgements come in any order. Killed at random moments, the mirror
// still copies each source record exactly once, each source partition in
// order within every target partition.
func TestMirrorByKeyHashRestartsExactlyOnce(t *testing.T) {
	const (
		topic      = "orders"
		partitions = 6
		kills      = 8
	)
	needServices(t)
	testenv.Binary(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	createTopic(t, []string{src.Addr}, topic, partitions)
	createTopic(t, []string{dst.Addr}, topic, 4)
	stop := liveProducer(t, src.Addr, "dc1", topic, partitions, 0)
	for k := range kills {
		p, status := mirrorProcess(t, "dc1", src.Addr, dst.Addr, "--instance-id", "m1")
		if k%2 == 1 {
			testenv.Eventually(t, time.Minute, "the mirror copies", func() bool {
				st, err := fetchStatus(t, status)
				return err == nil && len(st.Sources) == 1 && len(st.Sources[0].Partitions) == partitions
			})
		}
		time.Sleep(time.Duration(rand.IntN(800)) * time.Millisecond)
		p.Kill()
	}
	counts := stop()
	p, _ := mirrorProcess(t, "dc1", src.Addr, dst.Addr, "--instance-id", "m1")
	var n int64
	for _, c := range counts {
		n += int64(c)
	}
	waitForCount(t, []string{dst.Addr}, topic, n, 2*time.Minute)
	time.Sleep(500 * time.Millisecond)
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	seen := map[int32]map[int]bool{}
	for tp, recs := range readTopic(t, []string{dst.Addr}, topic) {
		last := map[int32]int{}
		for _, r := range recs {
			o := parseOrigin(t, r)
			if seen[o.partition] == nil {
				seen[o.partition] = map[int]bool{}
			}
			if seen[o.partition][o.i] {
				t.Fatalf("source record %d/%d copied twice (again in target partition %d)", o.partition, o.i, tp)
			}
			seen[o.partition][o.i] = true
			if prev, ok := last[o.partition]; ok && o.i < prev {
				t.Fatalf("target partition %d: source partition %d's record %d after %d", tp, o.partition, o.i, prev)
			}
			last[o.partition] = o.i
		}
	}
	for p, c := range counts {
		if len(seen[p]) != c {
			t.Fatalf("source partition %d: %d of %d records in the target", p, len(seen[p]), c)
		}
	}
	t.Logf("%d kills, placement by key hash: %d records, each exactly once", kills, n)
}

// With Start largest, a partition the target holds no copy of starts at
// the source's end: only what is produced afterwards is copied. Once
// something is copied, the target's tail decides, as always.
func TestMirrorStartLargestCopiesOnlyNewRecords(t *testing.T) {
	const topic, partitions = "views", 2
	needServices(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	createTopic(t, []string{src.Addr}, topic, partitions)
	produce(t, []string{src.Addr}, "dc1", topic, partitions, 0, 100)
	m, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{bootstrapSource("dc1", src)}, Target: []string{dst.Addr}, Start: consumer.Largest})
	testenv.Eventually(t, time.Minute, "the mirror resumes both partitions", func() bool {
		st := m.Status()
		return len(st.Sources) == 1 && len(st.Sources[0].Partitions) == partitions
	})
	produce(t, []string{src.Addr}, "dc1", topic, partitions, 100, 150)
	waitForCount(t, []string{dst.Addr}, topic, partitions*50, time.Minute)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for p, recs := range readTopic(t, []string{dst.Addr}, topic) {
		if len(recs) != 50 || parseOrigin(t, recs[0]).i != 100 {
			t.Fatalf("target partition %d holds %d records starting with %d; want the 50 produced after the start", p, len(recs), parseOrigin(t, recs[0]).i)
		}
	}
}

// Upgrading from the mirror that committed source offsets: the target
// holds its copies (origin header "dc1", no hop) and the source its group's
// commit. The new mirror resumes at that commit once, then from its own
// hops; a new target with the same settings still gets everything.
func TestMirrorUpgradeResumesAtTheOlderMirrorsCommit(t *testing.T) {
	const topic = "views"
	needServices(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	createTopic(t, []string{src.Addr}, topic, 1)
	createTopic(t, []string{dst.Addr}, topic, 1)
	produce(t, []string{src.Addr}, "dc1", topic, 1, 0, 150)
	// What the older mirror left: copies of 0..99 and a commit of 100.
	old := newClient(t, []string{dst.Addr}, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 100 {
		r := testRecord("dc1", topic, 0, i)
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: mirror.OriginHeader, Value: []byte("dc1")})
		old.Produce(ctx, r, nil)
	}
	if err := old.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	commit := kadm.Offsets{}
	commit.AddOffset(topic, 0, 100, -1)
	if resp, err := kadm.NewClient(newClient(t, []string{src.Addr})).CommitOffsets(ctx, "tributary-mirror", commit); err != nil || resp.Error() != nil {
		t.Fatalf("committing: %v %v", err, resp.Error())
	}

	for _, target := range []*testenv.Broker{dst, testenv.StartBroker(t)} {
		_, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{bootstrapSource("dc1", src)}, Target: []string{target.Addr}})
		waitForCount(t, []string{target.Addr}, topic, 150, time.Minute)
		time.Sleep(300 * time.Millisecond)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		recs := readTopic(t, []string{target.Addr}, topic)[0]
		if len(recs) != 150 {
			t.Fatalf("target %s holds %d records, want 150 (each once)", target.Addr, len(recs))
		}
		for i, r := range recs {
			if o := parseOrigin(t, r); o.i != i {
				t.Fatalf("target %s: offset %d holds record %d", target.Addr, i, o.i)
			}
		}
	}
}
