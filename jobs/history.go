package jobs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// Outcomes of an attempt.
const (
	Committed = "committed" // the run's data and offsets are in the warehouse
	Failed    = "failed"    // nothing was committed
)

// Entry is one attempt to run a job, as kept in its history.
type Entry struct {
	Job     string `json:"job"`
	Run     string `json:"run,omitempty"`
	Attempt int    `json:"attempt"` // 1 for the first try, 2 for the first retry, ...
	Trigger string `json:"trigger"` // "schedule" or "manual"
	Host    string `json:"host"`
	PID     int    `json:"pid"`

	// Started is when the run took the job's lock (or, when it failed
	// before, when the attempt began); Finished is before it let go.
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Outcome  string    `json:"outcome"`
	Error    string    `json:"error,omitempty"`

	// The run's counts, as its loader.Summary has them (zero for an
	// attempt that failed before a run began).
	loader.RunCounts
}

func (e *Entry) fill(sum *loader.Summary) {
	if sum == nil {
		return
	}
	e.Run, e.RunCounts = sum.Run, sum.RunCounts
	if sum.Committed {
		e.Outcome = Committed
	}
}

// historyDir is where a job's history lives in its warehouse: one file
// per attempt, named so that names sort by start time.
func historyDir(job string) string { return path.Join("_tributary/jobs", job, "history") }

func entryName(e *Entry) string {
	run := e.Run
	if run == "" {
		run = "norun"
	}
	return fmt.Sprintf("%s-a%d-%s.json", e.Started.UTC().Format("20060102T150405.000000000Z"), e.Attempt, run)
}

// record keeps e in the job's warehouse, or in the local state directory
// when the warehouse cannot be written.
func record(w warehouse.FS, stateDir string, e *Entry) error {
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if w != nil {
		err = warehouse.WriteFile(w, path.Join(historyDir(e.Job), entryName(e)), data)
		if err == nil {
			return nil
		}
	}
	if stateDir == "" {
		return errors.Join(errors.New("history: the warehouse cannot be written and there is no local state directory"), err)
	}
	return appendLocal(stateDir, e)
}

func localHistory(stateDir, job string) string {
	return filepath.Join(stateDir, "jobs", job, "history.jsonl")
}

func appendLocal(stateDir string, e *Entry) error {
	p := localHistory(stateDir, e.Job)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	line, _ := json.Marshal(e)
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// DefaultStateDir is where attempts that could not reach their warehouse
// are recorded: $XDG_STATE_HOME/tributary or ~/.local/state/tributary.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "tributary")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "tributary")
	}
	return filepath.Join(os.TempDir(), "tributary-state")
}

// History returns the last limit attempts of a job (all if limit <= 0),
// oldest first, from its warehouse and the local state directory. A
// warehouse that cannot be read is reported in err, with the local
// entries still returned.
func History(spec *Spec, stateDir string, limit int) ([]*Entry, error) {
	var out []*Entry
	var werr error
	w, err := warehouse.OpenExistingWith(spec.Warehouse, warehouse.Options{HDFS: spec.HDFS, S3: spec.S3})
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			werr = err // a warehouse not created yet has no history
		}
	} else {
		defer w.Close()
		out, werr = readHistory(w, spec.Name, limit)
	}
	if stateDir != "" {
		local, err := readLocal(stateDir, spec.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, local...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, werr
}

func readHistory(w warehouse.FS, job string, limit int) ([]*Entry, error) {
	infos, err := w.ReadDir(historyDir(job))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the history of %s in %s: %w", job, w, err)
	}
	if limit > 0 && len(infos) > limit {
		infos = infos[len(infos)-limit:]
	}
	var out []*Entry
	for _, fi := range infos {
		if !strings.HasSuffix(fi.Name(), ".json") {
			continue
		}
		data, err := warehouse.ReadFile(w, path.Join(historyDir(job), fi.Name()))
		if err != nil {
			return nil, err
		}
		var e Entry
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", w, fi.Name(), err)
		}
		out = append(out, &e)
	}
	return out, nil
}

func readLocal(stateDir, job string) ([]*Entry, error) {
	f, err := os.Open(localHistory(stateDir, job))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, &e)
		}
	}
	return out, sc.Err()
}
