package log

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// cleanCrashPoints are the sync boundaries a cleaning passes: the .cleaned
// files, the directory, the swap marker's commit, the renames of the swap,
// the new indexes, and the cleaner checkpoint (an "other" file).
var cleanCrashPoints = func() []string {
	var ps []string
	for _, op := range []string{"cleaned-sync", "dir-sync", "swap-marker-sync", "swap-marker-rename",
		"gaps-rename", "segment-rename", "other-sync", "other-rename"} {
		ps = append(ps, "before-"+op, "after-"+op)
	}
	return ps
}()

// A power failure at any sync boundary of a cleaning leaves, after the next
// Open, either the log as it was before the cleaning or the log as the
// cleaning made it: record for record, never a mix.
func TestCleanSurvivesPowerLoss(t *testing.T) {
	clock := newFakeClock()
	cfg := compactConfig(clock)
	src := filepath.Join(t.TempDir(), "p")
	l, _ := openLog(t, src, cfg)
	w := written{}
	for i := range 120 {
		w.appendTo(t, l, clock.Now().UnixMilli(), nil, kv{fmt.Sprintf("k%d", i%7), fmt.Appendf(nil, "v%d", i)})
		if i%9 == 0 {
			w.appendTo(t, l, clock.Now().UnixMilli(), nil, kv{fmt.Sprintf("k%d", i%5), nil})
		}
		mustFlush(t, l)
	}
	before := readRecords(t, l)
	l.Close()

	done := copyDir(t, src)
	l, _ = openLog(t, done, cfg)
	if st, err := l.clean(newOffsetMap(1<<20), nil); err != nil || st.Segments < 2 {
		t.Fatalf("clean: %+v, %v", st, err)
	}
	after := readRecords(t, l)
	l.Close()
	if reflect.DeepEqual(before, after) {
		t.Fatal("the cleaning changed nothing: the test proves nothing")
	}

	for _, point := range cleanCrashPoints {
		for n := 1; n <= 3; n++ {
			reached := false
			t.Run(fmt.Sprintf("%s#%d", point, n), func(t *testing.T) {
				dir := copyDir(t, src)
				cfs := newCrashFS(t, dir)
				ccfg := cfg
				ccfg.FS = cfs
				if l, _, err := Open(dir, ccfg, quietLogger()); err == nil {
					cfs.CrashAt(point, n+cfs.Hits(point)) // count hits of the cleaning only
					l.clean(newOffsetMap(1<<20), nil)
					crash(l)
				}
				if reached = cfs.Crashed(); !reached {
					return
				}
				if err := cfs.PowerLoss(); err != nil {
					t.Fatal(err)
				}
				l, rep := openLog(t, dir, cfg)
				if rep.TruncatedBytes != 0 || len(rep.Lost) != 0 {
					t.Fatalf("recovery cut data: %+v", rep)
				}
				got := readRecords(t, l)
				if !reflect.DeepEqual(got, before) && !reflect.DeepEqual(got, after) {
					t.Fatalf("after power loss at %s#%d the log is neither the old one (%d records) nor the cleaned one (%d): %d records",
						point, n, len(before), len(after), len(got))
				}
				if _, err := os.Stat(filepath.Join(dir, swapMarkerFile)); err == nil {
					t.Fatal("swap marker left after Open")
				}
				if m, _ := filepath.Glob(filepath.Join(dir, "*"+cleanedSuffix)); len(m) > 0 {
					t.Fatalf(".cleaned files left after Open: %v", m)
				}
			})
			if !reached {
				if n == 1 {
					t.Errorf("the cleaning never reaches %s", point)
				}
				break
			}
		}
	}
}

func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// renameFailFS fails the renames of NNN.log.cleaned files, as a process
// killed between the renames of a swap would leave them.
type renameFailFS struct{ OSFS }

func (renameFailFS) Rename(oldpath, newpath string) error {
	if filepath.Ext(newpath) == ".log" {
		return fmt.Errorf("injected failure renaming %s", oldpath)
	}
	return os.Rename(oldpath, newpath)
}

// A swap stopped after its commit, with the gaps files renamed and the
// segments not, is finished by the next Open: the log is the cleaned one.
// The failed log stops taking appends meanwhile.
func TestInterruptedSwapFinishedAtOpen(t *testing.T) {
	clock := newFakeClock()
	cfg := compactConfig(clock)
	dir := filepath.Join(t.TempDir(), "p")
	l, _ := openLog(t, dir, cfg)
	w := written{}
	for i := range 80 {
		w.appendTo(t, l, clock.Now().UnixMilli(), nil, kv{fmt.Sprintf("k%d", i%4), fmt.Appendf(nil, "v%d", i)})
		mustFlush(t, l)
	}
	l.Close()
	fcfg := cfg
	fcfg.FS = renameFailFS{}
	l, _ = openLog(t, dir, fcfg)
	if _, err := l.clean(newOffsetMap(1<<20), nil); err == nil {
		t.Fatal("clean succeeded though its renames fail")
	}
	if _, err := l.Append(keyedBatch(1, nil, kv{"k", []byte("v")})); err == nil {
		t.Fatal("a log whose swap failed half-way still takes appends")
	}
	crash(l)
	l, rep := openLog(t, dir, cfg)
	if rep.TruncatedBytes != 0 || len(rep.Lost) != 0 {
		t.Fatalf("recovery cut data: %+v", rep)
	}
	checkCompacted(t, l, w, l.active.base, false)
}
