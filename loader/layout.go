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

// commitName is the name of the commit with sequence number seq (zero
// padded so names sort in commit order). It is the commit point itself:
// created exclusively (commitSlot), so that of two runs that both read
// commit N, only one commits N+1.
func commitName(seq int64) string {
	return path.Join(commitsDir, fmt.Sprintf("%012d.json", seq))
}

// parseCommitName returns the sequence number of a commits entry, and its
// run for a commit made before commits were named by sequence number alone
// (<seq>-<run>.json, renamed into place without excluding a second run of
// the same number); legacy says which.
func parseCommitName(name string) (seq int64, run string, legacy, ok bool) {
	base, found := strings.CutSuffix(name, ".json")
	if !found {
		return 0, "", false, false
	}
	s, r, legacy := strings.Cut(base, "-")
	if len(s) != 12 {
		return 0, "", false, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || legacy && r == "" {
		return 0, "", false, false
	}
	return n, r, legacy, true
}

// topicLockName is the lock a run holds on each topic it loads.
func topicLockName(topic string) string { return "topic-" + topic }
