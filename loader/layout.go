package loader

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// Where things live in the warehouse; see the package documentation.
const (
	stateDir     = "_tributary"
	runsDir      = stateDir + "/runs"
	commitsDir   = stateDir + "/commits"
	errorsDir    = "_errors"
	successName  = "_SUCCESS"
	manifestName = "MANIFEST.json"
	runInfoName  = "run.json"
)

// hourDir is the directory of a topic's hour: topic/YYYY/MM/DD/HH (UTC).
func hourDir(topic string, hour time.Time) string {
	h := hour.UTC()
	return fmt.Sprintf("%s/%04d/%02d/%02d/%02d", topic, h.Year(), h.Month(), h.Day(), h.Hour())
}

// hourStart parses the hour back out of an hourDir.
func hourStart(dir string) (time.Time, error) {
	parts := strings.Split(dir, "/")
	if len(parts) < 5 {
		return time.Time{}, fmt.Errorf("not an hour directory: %q", dir)
	}
	return time.Parse("2006/01/02/15", strings.Join(parts[len(parts)-4:], "/"))
}

// dataFileName names a data file by topic, partition, offset range and
// writer schema id. Names never collide: each offset is in one file.
func dataFileName(topic string, partition int32, first, last int64, schemaID int) string {
	return fmt.Sprintf("%s.p%d.%d-%d.s%d.avro", topic, partition, first, last, schemaID)
}

// errorFilePath is where a partition's undecodable records of one run go.
func errorFilePath(topic string, partition int32, first, last int64, started time.Time) string {
	d := started.UTC()
	return fmt.Sprintf("%s/%s/%04d/%02d/%02d/%s.p%d.%d-%d.jsonl", errorsDir, topic, d.Year(), d.Month(), d.Day(), topic, partition, first, last)
}

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
