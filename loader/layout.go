package loader

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// Where the loader's own state lives in the warehouse; see the package
// documentation. The layout readers share (topics, hour directories, data
// files) is package warehouse's.
const (
	stateDir     = warehouse.StateDir
	runsDir      = stateDir + "/runs"
	commitsDir   = stateDir + "/commits"
	manifestName = "MANIFEST.json"
	runInfoName  = "run.json"
)

func runDir(run string) string { return path.Join(runsDir, run) }

// commitName is the committed manifest's name: its sequence number (zero
// padded so names sort in commit order) and its run.
func commitName(seq int64, run string) string {
	return path.Join(commitsDir, fmt.Sprintf("%012d-%s.json", seq, run))
}

// parseCommitName returns the sequence number and run of a commits entry.
func parseCommitName(name string) (seq int64, run string, ok bool) {
	base, found := strings.CutSuffix(name, ".json")
	if !found {
		return 0, "", false
	}
	s, r, found := strings.Cut(base, "-")
	if !found {
		return 0, "", false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return n, r, true
}

// topicLockName is the lock a run holds on each topic it loads.
func topicLockName(topic string) string { return "topic-" + topic }
