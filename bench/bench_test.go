package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestBenchSmoke runs the whole bench for Tributary with a tiny message
// count, plus a peer whose scripts are missing, and checks the shape of
// what comes out: every row present, sane non-zero figures, the peer
// reported as not started rather than dropped. No peer is started and no
// figure is compared with a time.
func TestBenchSmoke(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	out := t.TempDir()
	rep, err := Run(context.Background(), Config{
		Messages:        3000,
		Systems:         []string{"tributary", "kafka"},
		RowTime:         time.Minute,
		LatencyRate:     200,
		LatencyTime:     time.Second,
		WorkDir:         t.TempDir(),
		TributaryBinary: testenv.Binary(t),
		Scripts:         t.TempDir(), // no peer.sh: kafka cannot start
		SkipCeiling:     true,
		Rounds:          1, // the capacity test's own smoke test is TestCapacitySmoke
		CapacityTime:    200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteFiles(out); err != nil {
		t.Fatal(err)
	}

	var rows []map[string]any
	data, err := os.ReadFile(filepath.Join(out, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatalf("bench.json is not an array of rows: %v", err)
	}
	for _, r := range rows {
		for _, k := range []string{"system", "test", "batch", "msgs_per_sec", "mb_per_sec"} {
			if _, ok := r[k]; !ok {
				t.Errorf("JSON row %v has no %q", r, k)
			}
		}
	}

	byKey := map[string]Row{}
	for _, r := range rep.Rows {
		byKey[r.System+"/"+r.Test+"/"+strconv.Itoa(r.Batch)+"/"+strconv.Itoa(r.Acks)] = r
	}
	for _, p := range producerRows {
		key := "tributary/produce/" + strconv.Itoa(p.batch) + "/" + strconv.Itoa(p.acks)
		r, ok := byKey[key]
		switch {
		case !ok:
			t.Errorf("no row %s", key)
		case r.Status != "ok":
			t.Errorf("%s: status %q", key, r.Status)
		case r.Messages != 3000 || r.MsgsPerSec <= 0 || r.MBPerSec <= 0:
			t.Errorf("%s: %d messages, %.0f msg/s, %.2f MB/s", key, r.Messages, r.MsgsPerSec, r.MBPerSec)
		case r.OverheadBytes == nil || *r.OverheadBytes <= 0:
			t.Errorf("%s: storage overhead %v, want a positive figure (a batch header at least)", key, r.OverheadBytes)
		case r.Ratio != 1:
			t.Errorf("%s: ratio to itself %v", key, r.Ratio)
		}
	}
	if r := byKey["tributary/consume/1000/0"]; r.Status != "ok" || r.Messages != 3000 || r.MsgsPerSec <= 0 {
		t.Errorf("consume row: %+v", r)
	}
	if r := byKey["tributary/latency/1/1"]; r.Status != "ok" || r.Messages == 0 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms {
		t.Errorf("latency row: %+v", r)
	}
	if r := byKey["tributary/memory/0/0"]; r.Status != "ok" || r.PeakRSSMB <= 0 {
		t.Errorf("memory row: %+v", r)
	}

	kafkaRows := 0
	for _, r := range rep.Rows {
		if r.System == "kafka" {
			kafkaRows++
			notStarted := strings.HasPrefix(r.Status, "not started: ") ||
				r.Test == TestReplicated && strings.HasPrefix(r.Status, "not applicable: ")
			if !notStarted || r.OK() || r.Ratio != 0 {
				t.Errorf("kafka row without its peer: %+v", r)
			}
		}
	}
	if want := len(allRows(Config{Tests: AllTests}, systems["kafka"], "x")); kafkaRows != want {
		t.Errorf("kafka has %d rows, want %d (a peer that cannot start keeps its rows)", kafkaRows, want)
	}

	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PRODUCER", "CONSUMER", "LATENCY", "MEMORY", "tributary", "not started", "1.00x"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table has no %q:\n%s", want, table.String())
		}
	}
	if svg, err := os.ReadFile(filepath.Join(out, "bench.svg")); err != nil || !bytes.Contains(svg, []byte("<rect")) {
		t.Errorf("bench.svg: %v, %d bytes", err, len(svg))
	}
	t.Logf("\n%s", table.String())
}

// A run of selected tests gives the rows of those tests only, for every
// system, started or not; a selection that cannot run is refused up front.
func TestBenchSelectedTests(t *testing.T) {
	for _, tests := range [][]string{{"latency", "bogus"}, {"consume"}} {
		_, err := Run(context.Background(), Config{Tests: tests, TributaryBinary: "unused", SkipCeiling: true})
		if err == nil {
			t.Errorf("tests %v: no error", tests)
		}
	}
	testenv.Needs(t, testenv.Tributary)
	rep, err := Run(context.Background(), Config{
		Messages:        1000,
		Systems:         []string{"tributary", "kafka-flush"},
		Tests:           []string{TestLatency},
		LatencyRate:     200,
		LatencyTime:     time.Second,
		WorkDir:         t.TempDir(),
		TributaryBinary: testenv.Binary(t),
		Scripts:         t.TempDir(), // no peer.sh: kafka-flush cannot start
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ceiling != nil {
		t.Errorf("a latency-only run measured the throughput ceiling: %+v", rep.Ceiling)
	}
	if len(rep.Rows) != 2 {
		t.Fatalf("%d rows, want a latency row per system: %+v", len(rep.Rows), rep.Rows)
	}
	for i, system := range []string{"tributary", "kafka-flush"} {
		r := rep.Rows[i]
		if r.System != system || r.Test != TestLatency {
			t.Errorf("row %d: %s %s, want %s latency", i, r.System, r.Test, system)
		}
	}
	if r := rep.Rows[0]; r.Status != "ok" || r.P50Ms <= 0 {
		t.Errorf("tributary latency row: %+v", r)
	}
	if r := rep.Rows[1]; !strings.HasPrefix(r.Status, "not started: ") {
		t.Errorf("kafka-flush row without its peer: %+v", r)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "LATENCY") || strings.Contains(table.String(), "PRODUCER") {
		t.Errorf("the table of a latency-only run should show that section alone:\n%s", table.String())
	}
}

func TestCeilingMeasures(t *testing.T) {
	lo, err := loopbackMBPerSec(context.Background(), 100*time.Millisecond)
	if err != nil || lo <= 0 {
		t.Errorf("loopback: %v MB/s, %v", lo, err)
	}
	dir := t.TempDir()
	disk, err := diskMBPerSec(dir, 4<<20)
	if err != nil || disk <= 0 {
		t.Errorf("disk: %v MB/s, %v", disk, err)
	}
	us, err := appendFsyncMicros(dir, 5)
	if err != nil || us <= 0 {
		t.Errorf("append + fdatasync: %v µs, %v", us, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the measures left %d files behind", len(left))
	}
}

func TestSTOMPFrames(t *testing.T) {
	tests := []struct {
		name, wire string
		command    string
		headers    map[string]string
		body       string
		err        string
	}{
		{name: "content-length body may hold NUL", wire: "MESSAGE\nack:7\ncontent-length:3\n\na\x00b\x00",
			command: "MESSAGE", headers: map[string]string{"ack": "7"}, body: "a\x00b"},
		{name: "body up to NUL", wire: "RECEIPT\nreceipt-id:1\n\n\x00", command: "RECEIPT",
			headers: map[string]string{"receipt-id": "1"}},
		{name: "heart-beats skipped", wire: "\n\r\nCONNECTED\nversion:1.2\n\n\x00", command: "CONNECTED",
			headers: map[string]string{"version": "1.2"}},
		{name: "first repeated header wins", wire: "MESSAGE\nx:1\nx:2\n\n\x00", command: "MESSAGE",
			headers: map[string]string{"x": "1"}},
		{name: "error frame", wire: "ERROR\nmessage:no such queue\n\ndetail\x00", err: "no such queue"},
		{name: "bad length", wire: "MESSAGE\ncontent-length:-1\n\n\x00", err: "bad content-length"},
		{name: "missing NUL", wire: "MESSAGE\ncontent-length:1\n\nab", err: "not followed by NUL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			go func() { server.Write([]byte(tc.wire)); server.Close() }()
			s := &stompConn{c: client, r: bufio.NewReader(client)}
			f, err := s.readFrame()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.command != tc.command || string(f.body) != tc.body {
				t.Errorf("got %s %q, want %s %q", f.command, f.body, tc.command, tc.body)
			}
			for k, v := range tc.headers {
				if f.headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, f.headers[k], v)
				}
			}
		})
	}
}

func TestSTOMPWriteFrame(t *testing.T) {
	var buf bytes.Buffer
	s := &stompConn{w: bufio.NewWriter(&buf)}
	s.writeFrame("SEND", []byte("hi"), "destination:/queue/q", "receipt:1")
	s.w.Flush()
	want := "SEND\ndestination:/queue/q\nreceipt:1\ncontent-length:2\n\nhi\x00"
	if buf.String() != want {
		t.Errorf("frame %q, want %q", buf.String(), want)
	}
}

// The replicated rows are compared across systems with the Tributary system
// of the same size, and each RF 3 row with its own system's RF 1 row; rows
// of tests that do not apply carry no figures and no ratios.
func TestReplicatedRatios(t *testing.T) {
	repl := func(system string, batch, replicas int, rate float64) Row {
		return Row{System: system, Test: TestReplicated, Batch: batch, Acks: AcksAll, Replicas: replicas, MsgsPerSec: rate, Status: "ok"}
	}
	rows := []Row{
		{System: "tributary", Test: TestProduce, Batch: 50, Acks: 1, MsgsPerSec: 1000, Status: "ok"},
		{System: "tributary", Test: TestMemory, PeakRSSMB: 100, Status: "ok"},
		repl("tributary", 50, 1, 0), // stands for a not-applicable row below
		repl("tributary-rf3", 50, 1, 4000),
		repl("tributary-rf3", 50, 3, 1000),
		repl("tributary-rf3", 1, 1, 800),
		repl("tributary-rf3", 1, 3, 200),
		{System: "tributary-rf3", Test: TestMemory, PeakRSSMB: 400, Status: "ok"},
		{System: "kafka-rf3", Test: TestProduce, Batch: 50, Acks: 1, Status: notApplicable(systems["kafka-rf3"])},
		repl("kafka-rf3", 50, 1, 8000),
		repl("kafka-rf3", 50, 3, 4000),
		{System: "kafka-rf3", Test: TestReplicated, Batch: 1, Acks: AcksAll, Replicas: 1, Status: "failed: boom"},
		repl("kafka-rf3", 1, 3, 300),
		{System: "kafka-rf3", Test: TestMemory, PeakRSSMB: 1200, Status: "ok"},
	}
	rows[2].Status = notApplicable(systems["tributary"])
	computeRatios(rows)
	computeReplicationRatios(rows)

	for _, c := range []struct {
		i              int
		ratio, rfRatio float64
	}{
		{2, 0, 0},    // not applicable: nothing
		{3, 1, 0},    // tributary-rf3 to itself; RF 1 has no rf3/rf1
		{4, 1, 0.25}, // 1000 / 4000
		{6, 1, 0.25}, // 200 / 800
		{7, 1, 0},    // memory of the cluster to itself, not to one node
		{8, 0, 0},    // kafka-rf3 runs no produce test
		{9, 2, 0},    // 8000 / 4000
		{10, 4, 0.5}, // 4000 / 1000 across systems; 4000 / 8000 within
		{11, 0, 0},   // failed
		{12, 1.5, 0}, // 300 / 200; its RF 1 row failed, so no rf3/rf1
		{13, 3, 0},   // 1200 / 400 MB: to tributary-rf3, not tributary
	} {
		r := rows[c.i]
		if r.Ratio != c.ratio || r.ReplicationRatio != c.rfRatio {
			t.Errorf("%s %s b%d RF%d: ratio %v, rf3/rf1 %v; want %v, %v", r.System, r.Test, r.Batch, r.Replicas,
				r.Ratio, r.ReplicationRatio, c.ratio, c.rfRatio)
		}
	}

	rep := &Report{Messages: 1000, MessageSize: MessageSize, Rows: rows, Notes: map[string]string{}}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"REPLICATED", "rf3/rf1", "0.25", "0.50", "4.00x", "n/a", "failed: boom"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table has no %q:\n%s", want, table.String())
		}
	}
	var svg bytes.Buffer
	if err := rep.WriteSVG(&svg); err != nil || !strings.Contains(svg.String(), "acks=all b50 RF3") {
		t.Errorf("chart has no replicated group (%v):\n%s", err, svg.String())
	}
}

// The replicated test runs on the three-node systems and the paper's tests
// on the one-node systems; a system none of whose selected tests applies is
// not started, and still has its rows, saying why they are empty.
func TestTestsApplyBySystemSize(t *testing.T) {
	one, three := systems["tributary"], systems["tributary-rf3"]
	replicatedOnly := Config{Tests: []string{TestReplicated, TestMemory}}
	if replicatedOnly.needsStart(one) || !replicatedOnly.needsStart(three) {
		t.Errorf("replicated,memory: start one-node %v, three-node %v; want false, true",
			replicatedOnly.needsStart(one), replicatedOnly.needsStart(three))
	}
	paper := Config{Tests: []string{TestProduce, TestMemory}}
	if !paper.needsStart(one) || paper.needsStart(three) {
		t.Errorf("produce,memory: start one-node %v, three-node %v; want true, false", paper.needsStart(one), paper.needsStart(three))
	}
	if m := (Config{Tests: []string{TestMemory}}); !m.needsStart(one) || !m.needsStart(three) {
		t.Errorf("memory alone starts every system")
	}

	rows := allRows(replicatedOnly, one, "")
	if len(rows) != len(replicatedRows)+1 {
		t.Fatalf("%d rows, want %d replicated and one memory: %+v", len(rows), len(replicatedRows), rows)
	}
	for _, r := range rows {
		if !strings.HasPrefix(r.Status, "not applicable: ") || r.OK() {
			t.Errorf("row of a system not started for lack of tests: %+v", r)
		}
	}
	rows = allRows(Config{Tests: AllTests}, three, "not started: no java")
	for _, r := range rows {
		wantPrefix := "not applicable: "
		if three.applies(r.Test) {
			wantPrefix = "not started: "
		}
		if !strings.HasPrefix(r.Status, wantPrefix) {
			t.Errorf("%s row of a cluster that did not start: %q, want %q...", r.Test, r.Status, wantPrefix)
		}
	}

	got := Config{Systems: []string{"kafka-rf3", "kafka"}}.withDefaults().Systems
	if want := []string{"tributary", "tributary-rf3", "kafka-rf3", "kafka"}; !slices.Equal(got, want) {
		t.Errorf("systems %v, want %v (each Tributary reference first)", got, want)
	}
	got = Config{Systems: []string{"kafka"}}.withDefaults().Systems
	if want := []string{"tributary", "kafka"}; !slices.Equal(got, want) {
		t.Errorf("systems %v, want %v (no cluster without a three-node system)", got, want)
	}
}

// TestTributaryClusterReplicated runs the replicated test on a real
// ZooKeeper and three broker processes, and checks that no process of the
// cluster outlives the run, whether it went well or its brokers could not
// start.
func TestTributaryClusterReplicated(t *testing.T) {
	testenv.Needs(t, testenv.ZooKeeper, testenv.Tributary)
	work := t.TempDir()
	rep, err := Run(context.Background(), Config{
		Messages:        400,
		Systems:         []string{"tributary-rf3"},
		Tests:           []string{TestReplicated, TestMemory},
		RowTime:         time.Minute,
		WorkDir:         work,
		Keep:            true,
		TributaryBinary: testenv.Binary(t),
		SkipCeiling:     true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if left := processesUnder(t, work); len(left) > 0 {
		t.Errorf("processes left running after the run: %v", left)
	}
	var replicated int
	for _, r := range rep.Rows {
		switch {
		case r.System == "tributary":
			if !strings.HasPrefix(r.Status, "not applicable: ") {
				t.Errorf("one-node row of a replicated run: %+v", r)
			}
		case r.Test == TestReplicated:
			replicated++
			if r.Status != "ok" || r.Messages != 400 || r.Ratio != 1 || (r.Replicas == 3) != (r.ReplicationRatio > 0) {
				t.Errorf("replicated row: %+v", r)
			}
		case r.Test == TestMemory:
			// three brokers and a JVM: surely more than one Go process's 10 MB
			if r.Status != "ok" || r.PeakRSSMB < 30 {
				t.Errorf("memory row: %+v", r)
			}
		}
	}
	if replicated != len(replicatedRows) {
		t.Errorf("%d replicated rows, want %d", replicated, len(replicatedRows))
	}

	// Brokers that exit at once (an unknown flag) fail the start, and take
	// the ZooKeeper started for them down with them.
	bad := t.TempDir()
	_, err = startTributaryCluster(context.Background(), Config{
		TributaryBinary: testenv.Binary(t), TributaryArgs: []string{"--no-such-flag"}}, bad)
	if err == nil {
		t.Fatal("a cluster of brokers with an unknown flag started")
	}
	if left := processesUnder(t, bad); len(left) > 0 {
		t.Errorf("processes left running after a failed start (%v): %v", err, left)
	}
}

// processesUnder lists the processes whose command line names dir.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		if cmd := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})); strings.Contains(cmd, dir) {
			found = append(found, cmd)
		}
	}
	return found
}
