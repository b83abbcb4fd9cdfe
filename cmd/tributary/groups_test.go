package main_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// groupsCLI runs `tributary groups args...` and returns its output; wantOK
// says whether it must succeed or fail.
func groupsCLI(t *testing.T, wantOK bool, addr string, args ...string) string {
	t.Helper()
	args = append([]string{"groups", args[0], "--brokers", addr}, args[1:]...)
	out, err := exec.Command(testenv.Binary(t), args...).CombinedOutput()
	if (err == nil) != wantOK {
		t.Fatalf("tributary %s: err %v, want success %v\n%s", strings.Join(args, " "), err, wantOK, out)
	}
	return string(out)
}

func wantLine(t *testing.T, out, pattern string) {
	t.Helper()
	if !regexp.MustCompile(`(?m)` + pattern).MatchString(out) {
		t.Fatalf("no line matching %q in:\n%s", pattern, out)
	}
}

// TestGroupsCommand: list, describe with lag, reset-offsets in each mode,
// refusal while the group has members, delete.
func TestGroupsCommand(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	b := brokertest.StartGroupBroker(t)
	brokertest.CreateTopic(t, b.Addr, "events", 2, nil)
	brokertest.ProduceValues(t, b.Addr, "events", 0, 100) // 50 per partition
	brokertest.CommitOffsets(t, b.Addr, "cli-app", "events", map[int32]int64{0: 20, 1: 50})

	wantLine(t, groupsCLI(t, true, b.Addr, "list"), `^cli-app\s+Empty\s`)
	out := groupsCLI(t, true, b.Addr, "describe", "cli-app")
	wantLine(t, out, `state Empty.*total lag 30`)
	wantLine(t, out, `^events\s+0\s+20\s+50\s+30\s`)
	wantLine(t, out, `^events\s+1\s+50\s+50\s+0\s`)

	steps := []struct {
		args []string
		want map[int32]int64
	}{
		{[]string{"--to-earliest"}, map[int32]int64{0: 0, 1: 0}},
		{[]string{"--to-latest"}, map[int32]int64{0: 50, 1: 50}},
		{[]string{"--to-offset", "10"}, map[int32]int64{0: 10, 1: 10}},
		{[]string{"--to-offset", "5", "--dry-run"}, map[int32]int64{0: 10, 1: 10}},
		{[]string{"--to-offset", "999", "--topic", "events"}, map[int32]int64{0: 50, 1: 50}},
	}
	for _, s := range steps {
		groupsCLI(t, true, b.Addr, append([]string{"reset-offsets", "--group", "cli-app"}, s.args...)...)
		brokertest.WantOffsets(t, brokertest.Committed(t, b.Addr, "cli-app"), "events", s.want)
	}

	member := brokertest.NewClient(t, b.Addr, kgo.ConsumerGroup("cli-app"), kgo.ConsumeTopics("events"),
		kgo.SessionTimeout(2*time.Second), kgo.HeartbeatInterval(200*time.Millisecond))
	go member.PollFetches(t.Context())
	testenv.Eventually(t, 20*time.Second, "the member in the group", func() bool {
		return strings.Contains(groupsCLI(t, true, b.Addr, "list"), "Stable")
	})
	wantLine(t, groupsCLI(t, false, b.Addr, "reset-offsets", "--group", "cli-app", "--to-earliest"), `has active members`)
	wantLine(t, groupsCLI(t, false, b.Addr, "delete", "cli-app"), `still has members`)
	member.Close()
	wantLine(t, groupsCLI(t, true, b.Addr, "delete", "cli-app"), `deleted group cli-app`)
	wantLine(t, groupsCLI(t, false, b.Addr, "describe", "cli-app"), `does not exist`)
}
