package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

func TestCheckedRanges(t *testing.T) {
	type op struct {
		add  [2]int64 // added before asking
		clip int64    // clipped after adding, when > 0
	}
	tests := []struct {
		name    string
		ops     []op
		ask     [2]int64
		missing string
		set     string
	}{
		{"nothing checked", nil, [2]int64{0, 10}, "[[0 10]]", "[]"},
		{"appends extend one range", []op{{add: [2]int64{0, 5}}, {add: [2]int64{5, 9}}}, [2]int64{0, 9}, "[]", "[[0 9]]"},
		{"hole in the middle", []op{{add: [2]int64{0, 3}}, {add: [2]int64{6, 9}}}, [2]int64{1, 8}, "[[3 6]]", "[[0 3] [6 9]]"},
		{"filling a hole merges", []op{{add: [2]int64{0, 3}}, {add: [2]int64{6, 9}}, {add: [2]int64{3, 6}}}, [2]int64{0, 9}, "[]", "[[0 9]]"},
		{"overlapping adds", []op{{add: [2]int64{4, 8}}, {add: [2]int64{0, 5}}, {add: [2]int64{7, 12}}}, [2]int64{0, 14}, "[[12 14]]", "[[0 12]]"},
		{"before and after", []op{{add: [2]int64{5, 6}}}, [2]int64{0, 10}, "[[0 5] [6 10]]", "[[5 6]]"},
		{"clip cuts a range", []op{{add: [2]int64{0, 4}}, {add: [2]int64{6, 9}, clip: 7}}, [2]int64{0, 9}, "[[4 6] [7 9]]", "[[0 4] [6 7]]"},
		{"clip drops ranges past it", []op{{add: [2]int64{0, 4}}, {add: [2]int64{6, 9}, clip: 5}}, [2]int64{0, 9}, "[[4 9]]", "[[0 4]]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c checkedRanges
			for _, o := range tt.ops {
				c.add(o.add[0], o.add[1])
				if o.clip > 0 {
					c.clip(o.clip)
				}
			}
			if got := fmt.Sprint(c.missing(tt.ask[0], tt.ask[1])); got != tt.missing {
				t.Errorf("missing%v = %s, want %s", tt.ask, got, tt.missing)
			}
			if got := fmt.Sprint(c.r); got != tt.set {
				t.Errorf("set %s, want %s", got, tt.set)
			}
		})
	}
	// Readers jumping about cost checks again, never memory.
	var c checkedRanges
	for i := range int64(3 * maxCheckedRanges) {
		c.add(10*i, 10*i+5)
	}
	if len(c.r) > maxCheckedRanges {
		t.Fatalf("%d ranges remembered, at most %d", len(c.r), maxCheckedRanges)
	}
}

// lossRecorder is Config.OnLost and a BeforeLoss hook for tests.
type lossRecorder struct {
	mu     sync.Mutex
	lost   [][2]int64
	before []int64
	refuse error
}

func (r *lossRecorder) config(cfg Config) Config {
	cfg.OnLost = func(lr LostRange) {
		r.mu.Lock()
		r.lost = append(r.lost, [2]int64{lr.FirstOffset, lr.NextOffset})
		r.mu.Unlock()
	}
	cfg.BeforeLoss = func(first int64) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.before = append(r.before, first)
		return r.refuse
	}
	return cfg
}

func (r *lossRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("lost %v, before loss %v", r.lost, r.before)
}

// Bit rot in an old segment of a cleanly closed log: recovery does not look
// at it and the scrubber is off. Before, Read handed out the damaged batch
// and every consumer failed on its CRC for ever ("crc does not match"),
// seeing nothing after it; now the first read of it quarantines that batch
// and serves the rest.
func TestReadQuarantinesDamage(t *testing.T) {
	for _, read := range []struct {
		name string
		do   func(l *Log, offset int64) (Slice, error)
	}{
		{"Read", func(l *Log, off int64) (Slice, error) { return l.Read(off, 1<<20) }},
		{"ReadUpTo", func(l *Log, off int64) (Slice, error) { return l.ReadUpTo(off, 1<<20, 20) }},
		{"ReadToEnd", func(l *Log, off int64) (Slice, error) { return l.ReadToEnd(off, 1<<20) }},
	} {
		t.Run(read.name, func(t *testing.T) {
			dir := writeFixture(t)
			damageFixture(t, dir)
			var rec lossRecorder
			l, rep := openLog(t, dir, rec.config(fixtureConfig()))
			if !rep.Clean {
				t.Fatalf("report %+v: a clean open should not scan", rep)
			}
			s, err := read.do(l, 6)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, h := range batchesIn(t, readAll(t, s)) { // CRC-checked
				got = append(got, h.BaseOffset)
			}
			if fmt.Sprint(got) != "[6 10]" {
				t.Fatalf("read from 6 served batches %v, want [6 10] (8 quarantined)", got)
			}
			if rec.String() != "lost [[8 10]], before loss [8]" {
				t.Fatalf("%s; want [8, 10) lost, after BeforeLoss(8)", &rec)
			}
			checkRecovered(t, l, 22, 4, true, [2]int64{8, 10})
		})
	}
}

// Damage in the active segment, which recovery after a clean shutdown
// trusts too: the read rolls the log so that the segment can be repaired
// like any sealed one; appends go on at the log end, never reusing the
// lost offsets.
func TestReadRepairsDamageInTheActiveSegment(t *testing.T) {
	dir := writeFixture(t)
	S := fixtureBatchSize()
	flipByte(t, segPath(dir, 18), S/2) // the batch at 18 of [18, 20, end 22)
	var rec lossRecorder
	l, _ := openLog(t, dir, rec.config(fixtureConfig()))
	s, err := l.Read(18, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if hs := batchesIn(t, readAll(t, s)); len(hs) != 1 || hs[0].BaseOffset != 20 {
		t.Fatalf("read from 18 served %v, want the batch at 20", hs)
	}
	if rec.String() != "lost [[18 20]], before loss [18]" {
		t.Fatal(&rec)
	}
	if res := mustAppend(t, l, fixtureBatch()); res.BaseOffset != 22 {
		t.Fatalf("next append at %d, want 22", res.BaseOffset)
	}
	mustFlush(t, l)
	checkRecovered(t, l, 24, 5, true, [2]int64{18, 20})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, _ := openLog(t, dir, fixtureConfig())
	checkRecovered(t, l2, 24, 5, true, [2]int64{18, 20})
}

// A BeforeLoss that fails (a replicated partition that cannot record where
// to fetch again) stops the quarantine: the read fails, nothing is lost,
// and once the hook works the next read repairs.
func TestReadCheckWaitsForBeforeLoss(t *testing.T) {
	dir := writeFixture(t)
	damageFixture(t, dir)
	rec := lossRecorder{refuse: errors.New("disk full")}
	l, _ := openLog(t, dir, rec.config(fixtureConfig()))
	if _, err := l.Read(8, 1<<20); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("Read: %v, want ErrCorruptBatch saying BeforeLoss failed", err)
	}
	if q, _ := filepath.Glob(filepath.Join(dir, "*.quarantine-*")); len(q) != 0 || len(rec.lost) != 0 {
		t.Fatalf("quarantined %v despite BeforeLoss failing", q)
	}
	rec.mu.Lock()
	rec.refuse = nil
	rec.mu.Unlock()
	s, err := l.Read(8, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if hs := batchesIn(t, readAll(t, s)); hs[0].BaseOffset != 10 {
		t.Fatalf("read from 8 after the repair served %d first", hs[0].BaseOffset)
	}
}

// A damaged length field: the read's own walk fails before any CRC is
// checked; the segment is scanned and repaired all the same.
func TestReadRepairsADamagedLength(t *testing.T) {
	dir := writeFixture(t)
	S := fixtureBatchSize()
	f, err := os.OpenFile(segPath(dir, 6), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0, 0, 0, 1}, S+recordbatch.OffLength) // the batch at 8 claims to be 13 bytes long
	f.Close()
	var rec lossRecorder
	l, _ := openLog(t, dir, rec.config(fixtureConfig()))
	for off := int64(0); off < 22; off++ {
		s, err := l.Read(off, 1)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		s.Release()
	}
	if rec.String() != "lost [[8 10]], before loss [8]" {
		t.Fatal(&rec)
	}
	checkRecovered(t, l, 22, 4, true, [2]int64{8, 10})
}

// Readers meeting the same damage at once: one repair, every reader
// served from the repaired segment, the loss reported once.
func TestConcurrentReadsOfDamageRepairOnce(t *testing.T) {
	dir := writeFixture(t)
	damageFixture(t, dir)
	S := fixtureBatchSize()
	flipByte(t, segPath(dir, 18), S/2) // the active segment too
	var rec lossRecorder
	l, _ := openLog(t, dir, rec.config(fixtureConfig()))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := []int64{6, 8, 18, 0}[i%4]
			s, err := l.Read(off, 1<<20)
			if err != nil {
				errs <- fmt.Errorf("Read(%d): %w", off, err)
				return
			}
			s.Release()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	rec.mu.Lock()
	lost := fmt.Sprint(rec.lost)
	rec.mu.Unlock()
	if lost != "[[8 10] [18 20]]" && lost != "[[18 20] [8 10]]" {
		t.Fatalf("lost %s, want [8, 10) and [18, 20) once each", lost)
	}
	checkRecovered(t, l, 22, 5, true, [2]int64{8, 10}, [2]int64{18, 20})
}
