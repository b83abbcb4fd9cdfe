package warehouse

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
)

// The warehouse layout: where the loader puts what, and where every reader
// (the audit's warehouse tier, the loader's own recovery) finds it. It
// lives here, beside the file system, so that the writer and the readers
// cannot disagree: a layout change is an edit of this file.
//
//	<topic>/YYYY/MM/DD/HH/<topic>.p<partition>.<first>-<last>.s<schema id>.avro
//	<topic>/YYYY/MM/DD/HH/_SUCCESS                  the hour is complete
//	<topic>/dt=YYYY-MM-DD/hr=HH/<topic>.p<partition>.<first>-<last>.s<schema id>.parquet
//	                                                Parquet loads: Hive-style partitions
//	_errors/<topic>/YYYY/MM/DD/...jsonl             records that could not be decoded
//	_tributary/                                     the loader's own state
//
// Names starting with "_" at the top are never topics.
const (
	// StateDir holds the loader's own state (runs, commits, locks).
	StateDir = "_tributary"
	// ErrorsDir holds the records the loader could not decode.
	ErrorsDir = "_errors"
	// SuccessName marks a complete hour directory.
	SuccessName = "_SUCCESS"
	// dataExt ends every data file's name.
	dataExt = ".avro"
	// hourLayout is an hour directory below its topic, as a time layout.
	hourLayout = "2006/01/02/15"
	// partitionLayout is a Parquet load's hour directory, Hive-style so
	// that Spark, Hive and pyarrow find the partition columns dt and hr.
	partitionLayout = "dt=2006-01-02/hr=15"
	parquetExt      = ".parquet"
)

// PartitionDir is the directory of a topic's hour in a Parquet load:
// topic/dt=YYYY-MM-DD/hr=HH (UTC).
func PartitionDir(topic string, hour time.Time) string {
	return topic + "/" + hour.UTC().Format(partitionLayout)
}

// ParquetFileName names a Parquet data file as DataFileName names an Avro
// one; the schema id is the one the file is written in.
func ParquetFileName(topic string, partition int32, first, last int64, schemaID int) string {
	return fmt.Sprintf("%s.p%d.%d-%d.s%d%s", topic, partition, first, last, schemaID, parquetExt)
}

// LockDir is where locks live in a warehouse: one directory per lock.
const LockDir = StateDir + "/locks"

// IsTopicDir reports whether a top-level directory name is a topic's
// rather than one of the warehouse's own ("_tributary", "_errors").
func IsTopicDir(name string) bool { return !strings.HasPrefix(name, "_") }

// IsDataFile reports whether a file name in an hour directory is a data
// file (an Avro object container file), not a marker.
//
// Parquet files are not (IsParquetFile), and Hours does not list
// Parquet's partition directories (PartitionHours).
func IsDataFile(name string) bool { return strings.HasSuffix(name, dataExt) }

// IsParquetFile reports whether a file name in a Parquet load's hour
// directory (PartitionDir) is a data file.
func IsParquetFile(name string) bool { return strings.HasSuffix(name, parquetExt) }

// PartitionHours lists a topic's Parquet hour directories
// (topic/dt=YYYY-MM-DD/hr=HH) in time order; a topic never loaded as
// Parquet has none.
func PartitionHours(w FS, topic string) ([]Hour, error) {
	days, err := w.ReadDir(topic)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s: %w", topic, err)
	}
	var out []Hour
	for _, d := range days {
		if !d.IsDir() || !strings.HasPrefix(d.Name(), "dt=") {
			continue
		}
		hours, err := w.ReadDir(path.Join(topic, d.Name()))
		if err != nil {
			return nil, fmt.Errorf("list %s/%s: %w", topic, d.Name(), err)
		}
		for _, h := range hours {
			dir := path.Join(topic, d.Name(), h.Name())
			if t, err := HourStart(dir); h.IsDir() && err == nil && PartitionDir(topic, t) == dir {
				out = append(out, Hour{Dir: dir, Start: t})
			}
		}
	}
	return out, nil
}

// HourDir is the directory of a topic's hour: topic/YYYY/MM/DD/HH (UTC).
func HourDir(topic string, hour time.Time) string {
	return topic + "/" + hour.UTC().Format(hourLayout)
}

// HourStart parses the hour back out of an HourDir or a PartitionDir.
func HourStart(dir string) (time.Time, error) {
	if i := strings.LastIndex(dir, "/dt="); i >= 0 {
		return time.Parse(partitionLayout, dir[i+1:])
	}
	parts := strings.Split(dir, "/")
	n := strings.Count(hourLayout, "/") + 1
	if len(parts) < n+1 {
		return time.Time{}, fmt.Errorf("not an hour directory: %q", dir)
	}
	return time.Parse(hourLayout, strings.Join(parts[len(parts)-n:], "/"))
}

// DataFileName names a data file by topic, partition, offset range and
// writer schema id. Names never collide: each offset is in one file.
func DataFileName(topic string, partition int32, first, last int64, schemaID int) string {
	return fmt.Sprintf("%s.p%d.%d-%d.s%d%s", topic, partition, first, last, schemaID, dataExt)
}

// CompactedFileName names the file a compaction merged an hour's files of
// one schema into; compaction is the compaction's id.
func CompactedFileName(topic, compaction string, schemaID int) string {
	return fmt.Sprintf("%s.compacted-%s.s%d%s", topic, compaction, schemaID, parquetExt)
}

// ErrorFilePath is where a partition's undecodable records of one run go,
// by the day the run started.
func ErrorFilePath(topic string, partition int32, first, last int64, started time.Time) string {
	d := started.UTC()
	return fmt.Sprintf("%s/%s/%04d/%02d/%02d/%s.p%d.%d-%d.jsonl", ErrorsDir, topic, d.Year(), d.Month(), d.Day(), topic, partition, first, last)
}

// Topics lists the topic directories of a warehouse, sorted.
func Topics(w FS) ([]string, error) {
	entries, err := w.ReadDir(".")
	if err != nil {
		return nil, fmt.Errorf("list warehouse %s: %w", w, err)
	}
	var topics []string
	for _, e := range entries {
		if e.IsDir() && IsTopicDir(e.Name()) {
			topics = append(topics, e.Name())
		}
	}
	return topics, nil
}

// An Hour is one hour directory of a topic.
type Hour struct {
	Dir   string    // topic/YYYY/MM/DD/HH
	Start time.Time // the hour's first instant, UTC
}

// Hours lists a topic's hour directories in time order; a topic never
// loaded has none. Directories that are not hour directories of the
// layout are passed over.
func Hours(w FS, topic string) ([]Hour, error) {
	depth := strings.Count(hourLayout, "/") + 1
	var out []Hour
	var walk func(dir string, level int) error
	walk = func(dir string, level int) error {
		if level == depth {
			if t, err := HourStart(dir); err == nil && HourDir(topic, t) == dir {
				out = append(out, Hour{Dir: dir, Start: t})
			}
			return nil
		}
		entries, err := w.ReadDir(dir)
		if err != nil {
			if level == 0 && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("list %s: %w", dir, err)
		}
		// ReadDir sorts by name, and the zero-padded names sort in time order.
		for _, e := range entries {
			if e.IsDir() && allDigits(e.Name()) {
				if err := walk(path.Join(dir, e.Name()), level+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(topic, 0)
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
