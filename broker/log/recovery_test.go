package log

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/recordbatch"
)

// The recovery fixture: 11 batches of 2 records, 3 batches a segment:
// segments at 0 [0,5], 6 [6,11], 12 [12,17], 18 [18,21].
const fixtureBatches = 11

func fixtureConfig() Config {
	cfg := testConfig()
	cfg.SegmentBytes = 3*fixtureBatchSize() + 10
	cfg.IndexIntervalBytes = 1 // an entry per batch: indexes worth damaging
	return cfg
}

func fixtureBatch() []byte { return makeBatch(batchOpts{records: 2, valueSize: 100}) }

func fixtureBatchSize() int64 { return int64(len(fixtureBatch())) }

func writeFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	l, _, err := Open(dir, fixtureConfig(), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	for range fixtureBatches {
		mustAppend(t, l, fixtureBatch())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func segPath(dir string, base int64) string { p, _ := segmentPaths(dir, base); return p }
func idxPath(dir string, base int64) string { _, p := segmentPaths(dir, base); return p }

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	f.ReadAt(b, at)
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func TestRecovery(t *testing.T) {
	S := fixtureBatchSize()
	tests := []struct {
		name           string
		damage         func(t *testing.T, dir string)
		clean          bool // leave the clean-shutdown marker
		noCheckpoint   bool // remove the recovery checkpoint: scan everything
		wantClean      bool
		wantScanned    int
		wantLEO        int64
		wantTruncBytes int64
		wantReason     string // substring; "" means no truncation
		wantSegments   int
		readLost       [][2]int64 // damage below the checkpoint, which recovery trusts and the first read quarantines
		wantLost       [][2]int64 // offset ranges [from, to) quarantined
	}{
		{name: "clean shutdown skips the scan", clean: true, wantClean: true,
			wantLEO: 22, wantSegments: 4},
		{name: "unclean scans from the checkpoint's segment",
			wantScanned: 1, wantLEO: 22, wantSegments: 4},
		{name: "unclean without checkpoint scans everything", noCheckpoint: true,
			wantScanned: 4, wantLEO: 22, wantSegments: 4},
		{name: "torn tail inside a batch",
			damage:      func(t *testing.T, dir string) { os.Truncate(segPath(dir, 18), 2*S-10) },
			wantScanned: 1, wantLEO: 20, wantTruncBytes: S - 10, wantReason: "torn tail at byte", wantSegments: 4},
		{name: "torn tail inside a batch header",
			damage:      func(t *testing.T, dir string) { os.Truncate(segPath(dir, 18), S+5) },
			wantScanned: 1, wantLEO: 20, wantTruncBytes: 5, wantReason: "torn tail", wantSegments: 4},
		{name: "zero-filled tail",
			damage:      func(t *testing.T, dir string) { appendBytes(t, segPath(dir, 18), make([]byte, 4096)) },
			wantScanned: 1, wantLEO: 22, wantTruncBytes: 4096, wantReason: fmt.Sprintf("torn tail at byte %d: 4096 zero bytes", 2*S), wantSegments: 4},
		{name: "flipped byte in the last segment costs that batch only",
			damage:      func(t *testing.T, dir string) { flipByte(t, segPath(dir, 18), S/2) },
			wantScanned: 1, wantLEO: 22, wantSegments: 4, wantLost: [][2]int64{{18, 20}}},
		{name: "flipped byte in the last batch is the tail",
			damage:      func(t *testing.T, dir string) { flipByte(t, segPath(dir, 18), S+S/2) },
			wantScanned: 1, wantLEO: 20, wantTruncBytes: S, wantReason: "corrupt batch at byte 279: crc mismatch", wantSegments: 4},
		{name: "flipped byte in a middle segment costs that batch only", noCheckpoint: true,
			damage:      func(t *testing.T, dir string) { flipByte(t, segPath(dir, 6), S+S/2) },
			wantScanned: 4, wantLEO: 22, wantSegments: 4, wantLost: [][2]int64{{8, 10}}},
		{name: "two damaged batches in one segment", noCheckpoint: true,
			damage: func(t *testing.T, dir string) {
				flipByte(t, segPath(dir, 6), S/2)
				flipByte(t, segPath(dir, 6), 2*S+S/2)
			},
			wantScanned: 4, wantLEO: 22, wantSegments: 4, wantLost: [][2]int64{{6, 8}, {10, 12}}},
		{name: "damaged last batch of a middle segment: the gap crosses into the next", noCheckpoint: true,
			damage:      func(t *testing.T, dir string) { flipByte(t, segPath(dir, 6), 2*S+S/2) },
			wantScanned: 4, wantLEO: 22, wantSegments: 4, wantLost: [][2]int64{{10, 12}}},
		{name: "base offset flipped in the middle", noCheckpoint: true,
			damage:      func(t *testing.T, dir string) { flipByte(t, segPath(dir, 6), S+7) },
			wantScanned: 4, wantLEO: 22, wantSegments: 4, wantLost: [][2]int64{{8, 10}}},
		{name: "length field damaged in the middle", noCheckpoint: true,
			damage:      func(t *testing.T, dir string) { flipByte(t, segPath(dir, 6), S+recordbatch.OffLength+1) },
			wantScanned: 4, wantLEO: 22, wantSegments: 4, wantLost: [][2]int64{{8, 10}}},
		{name: "middle segment of garbage", noCheckpoint: true,
			damage: func(t *testing.T, dir string) {
				g := make([]byte, 3*S)
				randomBytes(g, 2)
				os.WriteFile(segPath(dir, 6), g, 0o644)
			},
			wantScanned: 4, wantLEO: 22, wantSegments: 4, wantLost: [][2]int64{{6, 12}}},
		// Recovery trusts it; the first read of it quarantines it (readcheck.go).
		{name: "flipped byte below the checkpoint is left to the read check",
			damage:      func(t *testing.T, dir string) { flipByte(t, segPath(dir, 6), S+S/2) },
			wantScanned: 1, wantLEO: 22, wantSegments: 4, readLost: [][2]int64{{8, 10}}},
		{name: "base offset out of sequence",
			damage:      func(t *testing.T, dir string) { flipByte(t, segPath(dir, 18), S+7) },
			wantScanned: 1, wantLEO: 20, wantTruncBytes: S, wantReason: "base offset", wantSegments: 4},
		{name: "magic changed",
			damage:      func(t *testing.T, dir string) { flipByte(t, segPath(dir, 18), S+recordbatch.OffMagic) },
			wantScanned: 1, wantLEO: 20, wantTruncBytes: S, wantReason: "magic", wantSegments: 4},
		{name: "segment of garbage",
			damage: func(t *testing.T, dir string) {
				g := make([]byte, 3000)
				randomBytes(g, 1)
				os.WriteFile(segPath(dir, 18), g, 0o644)
			},
			wantScanned: 1, wantLEO: 18, wantTruncBytes: 3000, wantReason: "corrupt batch at byte 0", wantSegments: 4},
		{name: "segment not continuing the previous one",
			damage: func(t *testing.T, dir string) {
				os.Rename(segPath(dir, 18), segPath(dir, 30))
				os.Rename(idxPath(dir, 18), idxPath(dir, 30))
			},
			wantScanned: 1, wantLEO: 18, wantTruncBytes: 2 * S, wantReason: "previous one ends at 18", wantSegments: 3},
		{name: "clean marker but torn tail falls back to a scan", clean: true,
			damage:      func(t *testing.T, dir string) { os.Truncate(segPath(dir, 18), 2*S-1) },
			wantScanned: 1, wantLEO: 20, wantTruncBytes: S - 1, wantReason: "torn tail", wantSegments: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFixture(t)
			if !tt.clean {
				makeUnclean(t, dir, !tt.noCheckpoint)
			}
			if tt.damage != nil {
				tt.damage(t, dir)
			}
			l, rep := openLog(t, dir, fixtureConfig())
			t.Logf("report: %+v", rep)
			if rep.Clean != tt.wantClean || rep.SegmentsScanned != tt.wantScanned || rep.TruncatedBytes != tt.wantTruncBytes {
				t.Fatalf("report %+v, want clean %v, scanned %d, truncated bytes %d",
					rep, tt.wantClean, tt.wantScanned, tt.wantTruncBytes)
			}
			if tt.wantReason == "" {
				if rep.TruncatedAt != -1 || rep.Reason != "" {
					t.Fatalf("report %+v says something was cut", rep)
				}
			} else if rep.TruncatedAt != tt.wantLEO || !strings.Contains(rep.Reason, tt.wantReason) {
				t.Fatalf("report %+v, want truncation at %d for %q", rep, tt.wantLEO, tt.wantReason)
			}
			if strings.Contains(rep.Reason, "torn") != strings.Contains(tt.wantReason, "torn") {
				t.Fatalf("reason %q: torn tail and corruption confused", rep.Reason)
			}
			var lost [][2]int64
			for _, r := range rep.Lost {
				lost = append(lost, [2]int64{r.FirstOffset, r.NextOffset})
				if fileSize(t, r.Quarantine) != r.ToByte-r.FromByte {
					t.Fatalf("quarantine %s holds %d bytes, want %d", r.Quarantine, fileSize(t, r.Quarantine), r.ToByte-r.FromByte)
				}
			}
			if fmt.Sprint(lost) != fmt.Sprint(tt.wantLost) {
				t.Fatalf("lost %v, want %v", lost, tt.wantLost)
			}
			for off := l.StartOffset(); off < tt.wantLEO && len(tt.readLost) > 0; off++ {
				s, err := l.Read(off, 1<<20) // as a consumer would: the read check repairs
				if err != nil {
					t.Fatalf("Read(%d): %v", off, err)
				}
				s.Release()
			}
			checkRecovered(t, l, tt.wantLEO, tt.wantSegments, true, append(tt.wantLost, tt.readLost...)...)

			// The log goes on from where recovery left it, and reopens the same.
			res := mustAppend(t, l, fixtureBatch())
			if res.BaseOffset != tt.wantLEO {
				t.Fatalf("next append at %d, want %d", res.BaseOffset, tt.wantLEO)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, rep2 := openLog(t, dir, fixtureConfig())
			if !rep2.Clean || rep2.IndexesRebuilt != 0 || l2.LogEndOffset() != tt.wantLEO+2 {
				t.Fatalf("reopen: %+v, LEO %d; want clean, no rebuild, LEO %d", rep2, l2.LogEndOffset(), tt.wantLEO+2)
			}
		})
	}
}

// checkRecovered checks a log holds exactly the valid batches [start, leo),
// all readable and flushed, with indexes matching their segments.
//
// Offsets in a lost range are read as the first batch after it.
func checkRecovered(t *testing.T, l *Log, leo int64, segments int, verifyCRC bool, lost ...[2]int64) {
	t.Helper()
	if l.LogEndOffset() != leo || l.HighWatermark() != leo {
		t.Fatalf("LEO %d, HW %d; want both %d", l.LogEndOffset(), l.HighWatermark(), leo)
	}
	if n := len(segmentFiles(t, l.dir)); n != segments {
		t.Fatalf("%d segment files, want %d", n, segments)
	}
	var total int64
	for _, s := range l.segs {
		total += fileSize(t, s.path)
		rebuilt := &segment{base: s.base, f: s.f, maxTs: -1, gaps: s.gaps}
		if _, p := rebuilt.walk(newReader(s.f, s.size, scanWindow), 0, s.base, l.cfg.IndexIntervalBytes, verifyCRC, nil); p != nil {
			t.Fatalf("segment %d after recovery: %v", s.base, p)
		}
		if !equalIndex(rebuilt.index, s.index) {
			t.Fatalf("segment %d: index in memory differs from the segment's batches", s.base)
		}
	}
	if total != l.Size() {
		t.Fatalf("Size() = %d, files hold %d", l.Size(), total)
	}
	for off := l.StartOffset(); off < leo; off++ {
		s, err := l.Read(off, 1)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		b := readAll(t, s)
		h := recordbatch.ParseHeader(b)
		if verifyCRC {
			batchesIn(t, b)
		}
		want := off
		for _, r := range lost {
			if off >= r[0] && off < r[1] {
				want = r[1]
			}
		}
		if int64(len(b)) != h.Size() || h.BaseOffset > want || h.NextOffset() <= want {
			t.Fatalf("Read(%d) returned the batch at %d, want the one holding %d", off, h.BaseOffset, want)
		}
	}
}

func randomBytes(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func equalIndex(a, b []indexEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestIndexRecovery(t *testing.T) {
	tests := []struct {
		name        string
		damage      func(t *testing.T, path string, orig []byte)
		wantRebuilt bool
	}{
		{"missing", func(t *testing.T, p string, _ []byte) { os.Remove(p) }, true},
		{"empty", func(t *testing.T, p string, _ []byte) { os.WriteFile(p, nil, 0o644) }, false},
		{"garbage", func(t *testing.T, p string, orig []byte) {
			g := make([]byte, len(orig))
			randomBytes(g, 3)
			os.WriteFile(p, g, 0o644)
		}, true},
		{"not a whole number of entries", func(t *testing.T, p string, orig []byte) {
			os.WriteFile(p, append(bytes.Clone(orig), 1, 2, 3), 0o644)
		}, true},
		{"longer than its segment", func(t *testing.T, p string, orig []byte) {
			extra := indexEntry{rel: 100, pos: 1 << 20, maxTs: 1 << 40}.appendTo(nil)
			os.WriteFile(p, append(bytes.Clone(orig), extra...), 0o644)
		}, true},
		{"last entry pointing inside a batch", func(t *testing.T, p string, orig []byte) {
			b := bytes.Clone(orig)
			b[len(b)-indexEntrySize+7]++ // position + 1
			os.WriteFile(p, b, 0o644)
		}, true},
		{"shorter: a valid prefix", func(t *testing.T, p string, orig []byte) {
			os.WriteFile(p, orig[:indexEntrySize], 0o644)
		}, false},
	}
	for _, tt := range tests {
		for _, clean := range []bool{true, false} {
			name := tt.name + map[bool]string{true: " clean", false: " unclean"}[clean]
			t.Run(name, func(t *testing.T) {
				dir := writeFixture(t)
				if !clean {
					makeUnclean(t, dir, true)
				}
				p := idxPath(dir, 6) // a sealed segment, below the checkpoint
				orig, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				tt.damage(t, p, orig)
				l, rep := openLog(t, dir, fixtureConfig())
				wantRebuilt := 0
				if tt.wantRebuilt {
					wantRebuilt++
				}
				if !clean {
					wantRebuilt++ // the scanned active segment
				}
				if rep.Clean != clean || rep.IndexesRebuilt != wantRebuilt || rep.TruncatedAt != -1 {
					t.Fatalf("report %+v, want clean %v, %d index rebuilt, nothing cut", rep, clean, wantRebuilt)
				}
				checkRecovered(t, l, 22, 4, true)
				if got, _ := os.ReadFile(p); !bytes.Equal(got, orig) {
					t.Fatalf("index file after Open differs from the original (%d vs %d bytes)", len(got), len(orig))
				}
			})
		}
	}
}

func TestRecoveryOfEmptyAndNewDirectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	l, rep := openLog(t, dir, testConfig())
	if !rep.Clean || rep.TruncatedAt != -1 || l.LogEndOffset() != 0 || l.StartOffset() != 0 { // nothing to recover: reported clean
		t.Fatalf("new log: %+v LEO %d", rep, l.LogEndOffset())
	}
	crash(l)
	l2, _ := openLog(t, dir, testConfig())
	if l2.LogEndOffset() != 0 {
		t.Fatalf("LEO %d", l2.LogEndOffset())
	}
	// Leftovers of interrupted writes are cleaned up.
	crash(l2)
	os.WriteFile(filepath.Join(dir, checkpointFile+".tmp"), []byte("12"), 0o644)
	os.WriteFile(idxPath(dir, 500), make([]byte, 16), 0o644)
	openLog(t, dir, testConfig())
	if _, err := os.Stat(idxPath(dir, 500)); !os.IsNotExist(err) {
		t.Fatal("orphan index kept")
	}
	if _, err := os.Stat(filepath.Join(dir, checkpointFile+".tmp")); !os.IsNotExist(err) {
		t.Fatal("temporary checkpoint kept")
	}
}

// A crash loses nothing below the high watermark: every flushed batch is
// there after recovery, and unflushed ones that reached the files are kept.
func TestCrashKeepsFlushedData(t *testing.T) {
	dir := t.TempDir()
	l, _ := openLog(t, dir, fixtureConfig())
	for range 7 {
		mustAppend(t, l, fixtureBatch())
	}
	mustFlush(t, l)
	hw := l.HighWatermark()
	mustAppend(t, l, fixtureBatch())
	crash(l)
	l2, rep := openLog(t, dir, fixtureConfig())
	if rep.Clean || rep.TruncatedAt != -1 || l2.LogEndOffset() < hw || l2.LogEndOffset() != 16 {
		t.Fatalf("after crash: %+v, LEO %d, HW before %d", rep, l2.LogEndOffset(), hw)
	}
}
