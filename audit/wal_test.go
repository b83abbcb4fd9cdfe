package audit_test

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/audit/internal/audittest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// walFile returns the path of the one WAL file in dir.
func walFile(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	if err != nil || len(m) != 1 {
		t.Fatalf("WAL files in %s: %v, %v; want one", dir, m, err)
	}
	return m[0]
}

// frameEnds returns where each frame of a WAL file ends.
func frameEnds(data []byte) []int {
	var ends []int
	for at := 0; at+8 <= len(data); {
		at += 8 + int(binary.BigEndian.Uint32(data[at:]))
		ends = append(ends, at)
	}
	return ends
}

// offlineWAL writes a WAL holding counts of three windows, built into
// monitoring events that could not be sent (no brokers), and returns the
// file's bytes.
func offlineWAL(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	w, err := audit.OpenWAL(dir, audit.WALOptions{Host: "fe-1"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	reg, err := sr.NewClient(sr.URLs("http://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: cl, Registry: reg, Host: "fe-1", WAL: w, FlushInterval: time.Hour, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	for i, win := range pastWindows(3) {
		pub.CountN("pageview", win, "fe-1", int64(10+i))
		pub.NoTime("pageview", win)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	pub.Close(ctx)
	data, err := os.ReadFile(walFile(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// openWith writes data as the WAL file of a new directory and opens it.
func openWith(t *testing.T, data []byte) (string, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "wal-1.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := audit.OpenWAL(dir, audit.WALOptions{Logger: quietLog})
	if err == nil {
		w.Close()
	}
	return path, err
}

// A WAL file with any byte changed, cut anywhere inside a frame, or with
// garbage after it, is refused with an error that names the file and
// says what to do: the producer publishes nothing from it, so nothing is
// counted twice. Cut exactly between two frames, it is a shorter valid
// WAL (see TestWALCutBetweenRecordsNeverDoubleCounts).
func TestWALDamageIsRefusedNamingTheFile(t *testing.T) {
	data := offlineWAL(t)
	ends := frameEnds(data)
	if len(ends) < 4 || ends[len(ends)-1] != len(data) {
		t.Fatalf("WAL of %d bytes with frames ending at %v", len(data), ends)
	}
	refused := func(what string, d []byte) {
		t.Helper()
		path, err := openWith(t, d)
		if err == nil {
			t.Fatalf("%s: opened", what)
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "Move its directory aside") {
			t.Fatalf("%s: %v; want the file named and what to do", what, err)
		}
	}
	for i := range data {
		d := append([]byte(nil), data...)
		d[i] ^= 0x20
		refused("byte "+strconv.Itoa(i)+" changed", d)
	}
	boundary := map[int]bool{}
	for _, e := range ends {
		boundary[e] = true
	}
	for n := 0; n < len(data); n++ {
		if boundary[n] {
			if _, err := openWith(t, data[:n]); err != nil {
				t.Fatalf("cut after a frame, at byte %d: %v", n, err)
			}
			continue
		}
		refused("cut at byte "+strconv.Itoa(n), data[:n])
	}
	refused("garbage appended", append(append([]byte(nil), data...), "garbage!"...))
	huge := append([]byte(nil), data...)
	binary.BigEndian.PutUint32(huge[ends[0]:], 1<<31)
	refused("a frame claiming 2 GiB", huge)
}

// Two producers given one WAL directory would publish each other's
// counts: the second is refused while the first runs.
func TestWALIsUsedByOneProcess(t *testing.T) {
	dir := t.TempDir()
	w, err := audit.OpenWAL(dir, audit.WALOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := audit.OpenWAL(dir, audit.WALOptions{}); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second open: %v; want refused", err)
	}
	w.Close()
	w, err = audit.OpenWAL(dir, audit.WALOptions{})
	if err != nil {
		t.Fatalf("open after the first closed: %v", err)
	}
	w.Close()
}

// A WAL cut exactly after a record (the monitoring events already sent
// and acknowledged, their records cut off) builds the same events again
// under the same sequence numbers, so their ids are the same and the
// reconciler counts them once: a cut never counts twice.
func TestWALCutBetweenRecordsNeverDoubleCounts(t *testing.T) {
	env := audittest.Start(t)
	ws := pastWindows(2)
	dir := t.TempDir()
	publish := func() {
		w, err := audit.OpenWAL(dir, audit.WALOptions{Host: "fe-1", Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		pub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, env.Broker.Addr), Registry: env.Registry, Host: "fe-1", WAL: w, FlushInterval: time.Hour, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// Counted and published; then the WAL loses everything after the
	// counts (the built events and their acknowledgement).
	w, err := audit.OpenWAL(dir, audit.WALOptions{Host: "fe-1", Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: audittest.Client(t, env.Broker.Addr), Registry: env.Registry, Host: "fe-1", WAL: w, FlushInterval: time.Hour, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	pub.CountN("pageview", ws[0], "fe-1", 7)
	pub.CountN("pageview", ws[1], "fe-1", 5)
	path := walFile(t, dir)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, before, 0o644); err != nil {
		t.Fatal(err)
	}
	publish()
	rep := reconcile(t, env.Broker.Addr, env.Registry, ws)
	for i, want := range []int64{7, 5} {
		if r := row(t, rep, "pageview", ws[i], audit.TierProducer); r.Received != want {
			t.Errorf("window %d: producer tier %d, want %d (counted once)", i, r.Received, want)
		}
	}
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// FuzzWALFile: whatever bytes a WAL file holds, opening it returns a
// state or an error, within bounded memory, never a panic.
func FuzzWALFile(f *testing.F) {
	dir := f.TempDir()
	w, err := audit.OpenWAL(dir, audit.WALOptions{Host: "seed", Logger: quietLog})
	if err != nil {
		f.Fatal(err)
	}
	w.Close()
	m, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	seed, _ := os.ReadFile(m[0])
	f.Add(seed)
	f.Add(append(append([]byte(nil), seed...), 0, 0, 0, 5, 0, 0, 0, 0, 'I', 1, 2))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "wal-1.log"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if w, err := audit.OpenWAL(dir, audit.WALOptions{Logger: quietLog}); err == nil {
			w.Close()
		}
	})
}

// A damaged length is checked against the file before anything is
// allocated: a 20-byte file claiming a 200 MB frame costs next to nothing.
func TestWALDamagedLengthAllocatesNothingLikeIt(t *testing.T) {
	data := make([]byte, 20)
	binary.BigEndian.PutUint32(data, 200<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := openWith(t, data); err == nil || !strings.Contains(err.Error(), "claims 209715200 bytes") {
		t.Fatalf("open: %v; want the claimed length refused", err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("refusing the file allocated %d MiB", grew>>20)
	}
}

// `tributary produce --audit-wal` on a damaged WAL stops before sending
// anything, naming the file and what to do.
func TestProduceRefusesADamagedWAL(t *testing.T) {
	audittest.NeedServices(t)
	data := offlineWAL(t)
	data[len(data)/2] ^= 1
	dir := t.TempDir()
	path := filepath.Join(dir, "wal-1.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testenv.Binary(t), "produce", "--brokers", "127.0.0.1:1", "--registry", "http://127.0.0.1:1", "--topic", "pageview",
		"--schema", pageviewSchema, "--audit-wal", dir)
	cmd.Stdin = strings.NewReader(`{"header": {"time": 1}, "memberId": 1, "pageKey": "home"}` + "\n")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), path) || !strings.Contains(string(out), "Move its directory aside") {
		t.Fatalf("tributary produce on a damaged WAL: %v\n%s\nwant a failure naming %s and what to do", err, out, path)
	}
}
