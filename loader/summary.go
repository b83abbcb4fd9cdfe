package loader

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// Summary is what a run did: enough for the jobs history and for an
// operator to see what was loaded, lost or rejected.
type Summary struct {
	Run       string    `json:"run"`
	Warehouse string    `json:"warehouse"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	// Committed is true once the run's manifest is committed: its data
	// will be in the warehouse even if moving it into place was cut short.
	Committed bool `json:"committed"`
	// ExpiredSnapshots counts the table snapshots that Config.Expire
	// expired after the run; ExpireError says why an expiry failed (the
	// run is committed all the same, and the next run tries again).
	ExpiredSnapshots int    `json:"expired_snapshots,omitempty"`
	ExpireError      string `json:"expire_error,omitempty"`
	RunCounts
	// NoHeaderTime counts events without a header time, filed by their
	// Kafka timestamp instead.
	NoHeaderTime int64 `json:"no_header_time,omitempty"`
	// Incomplete are hour directories that got _INCOMPLETE
	// (Config.CompleteMaxWait); Late those that had _SUCCESS and got
	// records (a _LATE-<run> file).
	Incomplete []string `json:"incomplete,omitempty"`
	Late       []string `json:"late,omitempty"`
	// Recovered are earlier committed runs whose moves this run finished;
	// Discarded are earlier uncommitted runs whose files it deleted.
	Recovered []string `json:"recovered,omitempty"`
	Discarded []string `json:"discarded,omitempty"`
	// Skipped are topics another run was loading (Config.Share), with
	// who held each.
	Skipped []SkippedTopic `json:"skipped,omitempty"`
	// AuditError says why the warehouse tier's counts of a committed run
	// were not published (Config.Audit); the run itself succeeded.
	AuditError string `json:"audit_error,omitempty"`
	// AuditPublished are the committed runs whose warehouse tier counts
	// this run published: its own and those of earlier runs cut short
	// before they published theirs.
	AuditPublished []string `json:"audit_published,omitempty"`
}

// RunCounts is what a run loaded, lost and marked: the part of its Summary
// the jobs history keeps for every attempt (jobs.Entry embeds it), so the
// two cannot drift apart. Embedded, its fields are the JSON object's own.
type RunCounts struct {
	// Records were written to data files; Bytes is the size of those files.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// InputBytes is the size of the Kafka record values read.
	InputBytes int64 `json:"input_bytes"`
	Files      int   `json:"files"`
	// Errors counts records that went to _errors.
	Errors     int64              `json:"errors"`
	Partitions []PartitionSummary `json:"partitions"`
	// Lost lists offset ranges that will never be loaded.
	Lost []LostRange `json:"lost,omitempty"`
	// Markers are hour directories that got a _SUCCESS marker.
	Markers []string `json:"markers,omitempty"`
	// Stopped says why fetching ended before the high watermark, if it
	// did: "max records" or "max duration".
	Stopped string `json:"stopped,omitempty"`
}

// PartitionSummary is what a run did on one partition: it read offsets
// [From, To) of a log that ended at End when the run began.
type PartitionSummary struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	End       int64  `json:"end"`
	Records   int64  `json:"records"`
	Errors    int64  `json:"errors,omitempty"`
}

// LostRange is an inclusive range of offsets of one partition that were
// deleted from the log before they were loaded (or, for a log truncated
// below the committed offset, offsets the warehouse already had but the log
// no longer has), with what the run did about it.
type LostRange struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	Reason    string `json:"reason"`
}

func (l LostRange) String() string {
	return fmt.Sprintf("%s/%d offsets %d-%d (%d records): %s", l.Topic, l.Partition, l.From, l.To, l.To-l.From+1, l.Reason)
}

// Progress is a snapshot of a running load, for progress displays.
type Progress struct {
	Elapsed    time.Duration
	Partitions []PartitionProgress
	Records    int64
	InputBytes int64
}

// PartitionProgress is one partition's position: Next of [Start, End).
type PartitionProgress struct {
	Topic       string
	Partition   int32
	Start, Next int64
	End         int64
	InputBytes  int64
}

// WriteText writes the summary for a person, as `tributary load` prints it.
func (s *Summary) WriteText(w io.Writer) {
	d := s.Finished.Sub(s.Started)
	state := "committed"
	switch {
	case !s.Committed && len(s.Partitions) == 0 && len(s.Skipped) > 0:
		state = "had nothing to load (every topic held by another run)"
	case !s.Committed:
		state = "NOT committed"
	}
	fmt.Fprintf(w, "run %s %s to %s in %s\n", s.Run, state, s.Warehouse, d.Round(time.Millisecond))
	secs := d.Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	fmt.Fprintf(w, "  %d records, %d files, %s written (%s read): %.0f records/s, %.1f MB/s\n",
		s.Records, s.Files, humanBytes(s.Bytes), humanBytes(s.InputBytes),
		float64(s.Records+s.Errors)/secs, float64(s.InputBytes)/secs/1e6)
	if s.Stopped != "" {
		fmt.Fprintf(w, "  stopped early by %s: the next run continues\n", s.Stopped)
	}
	for _, sk := range s.Skipped {
		fmt.Fprintf(w, "  skipped %s: %s\n", sk.Topic, sk.Holder)
	}
	if s.AuditError != "" {
		fmt.Fprintf(w, "  AUDIT counts not published: %s (they are in the run's manifest: the next run with --audit publishes them)\n", s.AuditError)
	}
	parts := append([]PartitionSummary(nil), s.Partitions...)
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].Topic != parts[j].Topic {
			return parts[i].Topic < parts[j].Topic
		}
		return parts[i].Partition < parts[j].Partition
	})
	for _, p := range parts {
		lag := ""
		if p.To < p.End {
			lag = fmt.Sprintf(", %d behind", p.End-p.To)
		}
		errs := ""
		if p.Errors > 0 {
			errs = fmt.Sprintf(", %d undecodable", p.Errors)
		}
		fmt.Fprintf(w, "  %s/%d: offsets %d-%d, %d records%s%s\n", p.Topic, p.Partition, p.From, p.To, p.Records, errs, lag)
	}
	if s.Errors > 0 {
		fmt.Fprintf(w, "  %d undecodable records written to _errors with their offsets\n", s.Errors)
	}
	if s.NoHeaderTime > 0 {
		fmt.Fprintf(w, "  %d events had no header time and were filed by their Kafka timestamp\n", s.NoHeaderTime)
	}
	for _, l := range s.Lost {
		fmt.Fprintf(w, "  LOST %s\n", l)
	}
	if earlier := slices.DeleteFunc(slices.Clone(s.AuditPublished), func(r string) bool { return r == s.Run }); len(earlier) > 0 {
		fmt.Fprintf(w, "  published the audit counts of earlier runs cut short: %s\n", strings.Join(earlier, ", "))
	}
	if len(s.Incomplete) > 0 {
		fmt.Fprintf(w, "  INCOMPLETE hours (the audit did not find them complete in time): %s\n", strings.Join(s.Incomplete, ", "))
	}
	if len(s.Late) > 0 {
		fmt.Fprintf(w, "  late records loaded into hours already marked complete (_LATE-%s): %s\n", s.Run, strings.Join(s.Late, ", "))
	}
	if len(s.Markers) > 0 {
		fmt.Fprintf(w, "  complete hours (_SUCCESS): %s\n", strings.Join(s.Markers, ", "))
	}
	if len(s.Recovered) > 0 {
		fmt.Fprintf(w, "  finished moving committed runs: %s\n", strings.Join(s.Recovered, ", "))
	}
	if len(s.Discarded) > 0 {
		fmt.Fprintf(w, "  discarded uncommitted runs: %s\n", strings.Join(s.Discarded, ", "))
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
