package mirror_test

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/internal/testenv"
)

// The mirror with --audit and --audit-wal, killed with SIGKILL 20 times
// under a live producer: at random moments, and three times each right after a
// copy was acknowledged (its count not yet written), with monitoring
// events written but not sent, and with them sent but not marked so.
// Then one run until the target holds everything and a clean stop. The
// mirror tier counts exactly the records the target holds: none lost
// (copies whose acknowledgement a killed mirror never wrote are found in
// the target), none twice (monitoring events sent again carry the same
// ids), and no monitoring event lost.
func TestMirrorAuditCountsExactlyOnceUnderSIGKILL(t *testing.T) {
	const (
		topic      = "clicks"
		partitions = 4
	)
	needServices(t)
	testenv.Binary(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	createTopic(t, []string{src.Addr}, topic, partitions)
	srcURL, dstURL, srcID := registries(t, topic+"-value")
	stop := liveProducer(t, src.Addr, "dc1", topic, partitions, srcID)
	args := []string{"--source-registry", "dc1=" + srcURL, "--target-registry", dstURL, "--instance-id", "m1",
		"--audit", "--audit-wal", t.TempDir(), "--audit-flush-interval", "1s", "--audit-window", "1m", "--shutdown-timeout", "60s"}
	plan := []string{"", "acked", "", "built", "", "sent", "", "acked", "", "built", "", "sent", "", "acked", "", "", "built", "", "sent", ""}
	for k, point := range plan {
		os.Setenv("TRIBUTARY_AUDIT_PAUSE_AT", point)
		p, status := mirrorProcess(t, "dc1", src.Addr, dst.Addr, args...)
		os.Unsetenv("TRIBUTARY_AUDIT_PAUSE_AT")
		switch {
		case point != "":
			testenv.Eventually(t, time.Minute, "the mirror to pause at "+point, func() bool {
				return strings.Contains(p.Output.String(), "paused at "+point)
			})
		case k%4 == 2:
			// Still starting: reading the WAL back, looking for
			// what the last one left, reading the tails.
			time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		default:
			// Copying, with counts not yet published.
			testenv.Eventually(t, time.Minute, "the mirror copies", func() bool {
				st, err := fetchStatus(t, status)
				return err == nil && len(st.Sources) == 1 && len(st.Sources[0].Partitions) == partitions
			})
			time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
		}
		p.Kill()
		t.Logf("kill %d (%s): the target holds %d records", k+1, cmp(point, "random"), total(t, dst.Addr, topic))
	}
	counts := stop()
	var n int64
	for _, c := range counts {
		n += int64(c)
	}
	p, _ := mirrorProcess(t, "dc1", src.Addr, dst.Addr, args...)
	waitForCount(t, []string{dst.Addr}, topic, n, 2*time.Minute)
	if err := p.Stop(90 * time.Second); err != nil {
		t.Fatalf("mirror did not stop cleanly: %v\n%s", err, p.Output.String())
	}
	checkExactCopy(t, readTopic(t, []string{src.Addr}, topic), readTopic(t, []string{dst.Addr}, topic), "dc1", srcID, schemaID(t, dstURL, topic+"-value"))

	reg, err := sr.NewClient(sr.URLs(dstURL))
	if err != nil {
		t.Fatal(err)
	}
	st := audit.NewStore()
	if _, err := audit.Load(t.Context(), audit.Source{Brokers: []string{dst.Addr}, Registry: reg, Logger: testLogger(t)}, time.Time{}, st); err != nil {
		t.Fatal(err)
	}
	rep := st.Report(audit.Options{Window: time.Minute, Topics: []string{topic}, Tiers: []string{audit.TierMirror}})
	var counted int64
	for _, r := range rep.Rows {
		if r.Tier == audit.TierMirror {
			counted += r.Received + r.NoTime + r.Malformed
		}
	}
	if counted != n {
		t.Errorf("the mirror tier counted %d records; the target holds %d", counted, n)
	}
	if len(rep.Lost) > 0 {
		t.Errorf("monitoring events lost: %+v", rep.Lost)
	}
	t.Logf("%d kill -9s: the target holds %d records, the mirror tier counted %d", len(plan), n, counted)
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
