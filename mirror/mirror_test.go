package mirror_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// Two live clusters with the same topic, 12 partitions each, 150,000
// records each, into one analysis cluster: every record arrives exactly
// once, in its partition, in order, with its origin.
func TestMirrorTwoClustersIntoOne(t *testing.T) {
	const (
		topic      = "pageviews"
		partitions = 12
		perPart    = 12500 // 150,000 per cluster, 300,000 in all
	)
	dc1, dc2 := startDC(t, "dc1", 2), startDC(t, "dc2", 1)
	target := testenv.StartBroker(t)
	for _, d := range []*dc{dc1, dc2} {
		createTopic(t, d.addrs(), topic, partitions)
		createTopic(t, d.addrs(), "_internal", 1) // excluded below
	}
	start := time.Now()
	produce(t, dc1.addrs(), "dc1", topic, partitions, 0, perPart)
	produce(t, dc2.addrs(), "dc2", topic, partitions, 0, perPart)
	t.Logf("produced 300,000 records into the sources in %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	m, stop := runMirror(t, mirror.Config{
		Sources: []mirror.Source{dc1.source(), dc2.source()},
		Target:  []string{target.Addr},
		Exclude: "^_",
	})
	waitForCount(t, []string{target.Addr}, topic, 2*partitions*perPart, 3*time.Minute)
	elapsed := time.Since(start)
	t.Logf("mirrored 300,000 records in %v (%.0f records/s)", elapsed.Round(time.Millisecond), 300000/elapsed.Seconds())

	// Offsets are committed once acknowledged: wait for the last commit.
	testenv.Eventually(t, 10*time.Second, "offsets all committed", func() bool {
		return allCommitted(m.Status(), perPart)
	})
	if err := stop(); err != nil {
		t.Fatalf("mirror: %v", err)
	}

	got := readTopic(t, []string{target.Addr}, topic)
	if len(got) != partitions {
		t.Fatalf("target has %d partitions, want %d", len(got), partitions)
	}
	streams := checkCopy(t, got)
	for _, d := range []string{"dc1", "dc2"} {
		for p := range int32(partitions) {
			s := streams[stream{d, p}]
			if len(s) != perPart || !slices.IsSorted(s) || s[0] != 0 || s[len(s)-1] != perPart-1 {
				t.Fatalf("%s partition %d: %d records in the target, want %d in order exactly once", d, p, len(s), perPart)
			}
		}
	}
	for tp, recs := range got {
		for _, r := range recs {
			if o := parseOrigin(t, r); o.partition != tp {
				t.Fatalf("record of source partition %d in target partition %d; counts match, so the partition must too", o.partition, tp)
			}
		}
	}
	if _, ends := endOffsets(t, newClient(t, []string{target.Addr}), "_internal"); len(ends) != 0 {
		t.Fatalf("excluded topic _internal exists in the target")
	}
}

func allCommitted(st mirror.Status, perPart int) bool {
	n := 0
	for _, s := range st.Sources {
		for _, p := range s.Partitions {
			if p.Safe != int64(perPart) {
				return false
			}
			n++
		}
	}
	return n > 0
}

// The target broker goes down in the middle of the copy and comes back on
// the same address and data: the mirror waits, commits nothing meanwhile,
// and resumes; nothing is lost.
func TestMirrorWaitsForTheTarget(t *testing.T) {
	const (
		topic      = "views"
		partitions = 6
		perPart    = 6000
	)
	d := startDC(t, "dc1", 1)
	target := testenv.StartBroker(t)
	addr, dir := target.Addr, target.DataDir
	createTopic(t, d.addrs(), topic, partitions)
	produce(t, d.addrs(), "dc1", topic, partitions, 0, perPart/3)

	m, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{d.source()}, Target: []string{addr}, CommitInterval: 100 * time.Millisecond})
	waitForCount(t, []string{addr}, topic, partitions*perPart/3, time.Minute)
	target.Stop()
	t.Logf("target down for %v (-mirror.outage)", *outage)
	// Records keep coming into the source while the target is away.
	produce(t, d.addrs(), "dc1", topic, partitions, perPart/3, perPart)
	time.Sleep(2 * time.Second) // whatever was acknowledged before the stop is committed by now
	before := committed(m.Status())
	time.Sleep(*outage - 2*time.Second)
	if after := committed(m.Status()); after != before {
		t.Fatalf("offsets committed while the target was down: %d before, %d after", before, after)
	}
	if lag := m.Status().Sources[0].Lag; lag < partitions*perPart/3 {
		t.Fatalf("status shows a lag of %d while the target is down, want at least %d", lag, partitions*perPart/3)
	}
	testenv.StartBroker(t, testenv.WithAddr(addr), testenv.WithDataDir(dir))

	testenv.Eventually(t, 2*time.Minute, "everything committed after the target came back", func() bool {
		return allCommitted(m.Status(), perPart)
	})
	if err := stop(); err != nil {
		t.Fatalf("mirror: %v", err)
	}
	var dups int
	for part, seq := range checkCopy(t, readTopic(t, []string{addr}, topic)) {
		n, err := checkRuns(seq, perPart)
		if err != nil {
			t.Fatalf("partition %d: %v", part.partition, err)
		}
		dups += n
	}
	t.Logf("target outage of %v: nothing lost, %d records repeated", *outage, dups)
}

func committed(st mirror.Status) (n int64) {
	for _, s := range st.Sources {
		for _, p := range s.Partitions {
			n += p.Safe
		}
	}
	return n
}

// Two mirrors in opposite directions between two clusters: each copies the
// other's own records once, and records that came from the other side are
// not sent back, so nothing loops.
func TestMirrorBothWaysDoesNotLoop(t *testing.T) {
	const perPart = 500
	a, b := startDC(t, "A", 1), startDC(t, "B", 1)
	for _, d := range []*dc{a, b} {
		createTopic(t, d.addrs(), "events", 2)
		produce(t, d.addrs(), d.name, "events", 2, 0, perPart)
	}
	toB, _ := runMirror(t, mirror.Config{Sources: []mirror.Source{a.source()}, Target: b.addrs(), TargetName: "B"})
	toA, _ := runMirror(t, mirror.Config{Sources: []mirror.Source{b.source()}, Target: a.addrs(), TargetName: "A"})
	skipped := func(m *mirror.Mirror) (n int64) {
		for _, s := range m.Status().Sources {
			for _, p := range s.Partitions {
				n += p.Skipped
			}
		}
		return n
	}
	testenv.Eventually(t, time.Minute, "each mirror to skip the other's copies", func() bool {
		return skipped(toB) == 2*perPart && skipped(toA) == 2*perPart
	})
	for _, d := range []*dc{a, b} {
		got := readTopic(t, d.addrs(), "events")
		own, copied := 0, 0
		for _, recs := range got {
			for _, r := range recs {
				o := parseOrigin(t, r)
				switch {
				case o.cluster == d.name && o.header == "":
					own++
				case o.cluster != d.name && o.header == o.cluster:
					copied++
				default:
					t.Fatalf("cluster %s holds a record from %s with origin header %q", d.name, o.cluster, o.header)
				}
			}
		}
		if own != 2*perPart || copied != 2*perPart {
			t.Fatalf("cluster %s holds %d own and %d copied records, want %d of each", d.name, own, copied, 2*perPart)
		}
	}
}
