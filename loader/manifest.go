package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tributary-io/tributary/loader/warehouse"
)

// manifestVersion is written in every manifest; a reader refuses a newer
// one rather than misread it.
const manifestVersion = 1

// Manifest is a run's commit record. Renaming it into _tributary/commits is
// the run's commit point: from then on its files belong in the warehouse
// and its offsets are the topics' offsets.
type Manifest struct {
	Version   int       `json:"version"`
	Run       string    `json:"run"`
	Seq       int64     `json:"seq"`
	Started   time.Time `json:"started"`
	Committed time.Time `json:"committed"`
	// Topics holds the complete state of every topic the run loaded, not
	// only what changed: the newest manifest holding a topic is all that is
	// needed to continue it.
	Topics map[string]*TopicState `json:"topics"`
	// Files are moved from Tmp to Final after the commit.
	Files []FileEntry `json:"files"`
	// Markers are hour directories that get a _SUCCESS marker after the
	// moves.
	Markers []string    `json:"markers,omitempty"`
	Lost    []LostRange `json:"lost,omitempty"`
	Summary *Summary    `json:"summary,omitempty"`
}

// TopicState is where a topic stands in the warehouse.
type TopicState struct {
	Partitions map[int32]*PartitionState `json:"partitions"`
	// PendingHours are hour directories that have data but no _SUCCESS
	// marker yet.
	PendingHours []string `json:"pending_hours,omitempty"`
}

// PartitionState is where a partition stands in the warehouse.
type PartitionState struct {
	// Next is the offset of the first record not yet loaded.
	Next int64 `json:"next"`
	// Progress (epoch ms) is the event time up to which the partition is
	// known to be loaded: the start of the last run that caught up with
	// the log, or the header time of the last record loaded.
	Progress int64 `json:"progress"`
}

// FileEntry is one file of a run.
type FileEntry struct {
	Tmp       string `json:"tmp"`
	Final     string `json:"final"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	First     int64  `json:"first"`
	Last      int64  `json:"last"`
	Records   int64  `json:"records"`
	Bytes     int64  `json:"bytes"`
	SchemaID  int    `json:"schema_id,omitempty"`
	Kind      string `json:"kind"` // "data" or "errors"
}

// runInfo is written first into a run's directory, so that recovery knows
// which topics an uncommitted run was loading (and may delete it when it
// holds those topics' locks).
type runInfo struct {
	Run     string    `json:"run"`
	Topics  []string  `json:"topics"`
	Started time.Time `json:"started"`
}

// maxStateFile bounds what is read of a manifest or run.json, so that a
// damaged or hostile file cannot exhaust memory. A manifest lists a run's
// files (about 300 bytes each; data files roll at 128 MiB): 64 MiB is room
// for some 200,000 files, far more than a run writes.
const maxStateFile = 64 << 20

func readJSON(w warehouse.FS, name string, v any) error {
	data, err := readStateFile(w, name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %s: %w", w, name, err)
	}
	return nil
}

func readStateFile(w warehouse.FS, name string) ([]byte, error) {
	r, err := w.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxStateFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", w, name, err)
	}
	if len(data) > maxStateFile {
		return nil, fmt.Errorf("%s: %s is larger than %d bytes: not a file the loader wrote", w, name, maxStateFile)
	}
	return data, nil
}

func writeJSON(w warehouse.FS, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return warehouse.WriteFile(w, name, data)
}

// commitEntry is a committed manifest's place in _tributary/commits.
type commitEntry struct {
	name string
	seq  int64
	run  string
}

func listCommits(w warehouse.FS) ([]commitEntry, error) {
	infos, err := w.ReadDir(commitsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", commitsDir, w, err)
	}
	var out []commitEntry
	for _, fi := range infos {
		if seq, run, ok := parseCommitName(fi.Name()); ok {
			out = append(out, commitEntry{name: path.Join(commitsDir, fi.Name()), seq: seq, run: run})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].seq != out[j].seq {
			return out[i].seq < out[j].seq
		}
		return out[i].run < out[j].run
	})
	return out, nil
}

func readManifest(w warehouse.FS, name string) (*Manifest, error) {
	data, err := readStateFile(w, name)
	if err != nil {
		return nil, err
	}
	_, run, ok := parseCommitName(path.Base(name))
	if !ok {
		run = ""
	}
	m, err := decodeManifest(data, run)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", w, name, err)
	}
	return m, nil
}

// errBadManifest marks a manifest that parses but cannot be one the loader
// wrote.
var errBadManifest = errors.New("not a manifest the loader wrote")

// decodeManifest parses a committed manifest and checks what recovery and
// the next run rely on, so that a damaged or hand-edited manifest is
// reported instead of acted on: its run is the one its name says (run is
// "" when unknown) and one path element, so finishing it removes only its
// own directory; it moves only files out of its run's directory and into
// the warehouse outside _tributary; every topic and partition has a state
// with a non-negative next offset.
func decodeManifest(data []byte, run string) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m.Version > manifestVersion {
		return nil, fmt.Errorf("manifest version %d is newer than this loader understands (%d)", m.Version, manifestVersion)
	}
	bad := func(format string, args ...any) (*Manifest, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{errBadManifest}, args...)...)
	}
	if m.Version < 1 {
		return bad("version %d", m.Version)
	}
	if m.Run == "" || m.Run == "." || m.Run == ".." || strings.ContainsAny(m.Run, "/\\") {
		return bad("run %q is not a run id", m.Run)
	}
	if run != "" && m.Run != run {
		return bad("it names run %q, its file name run %q", m.Run, run)
	}
	for t, ts := range m.Topics {
		if ts == nil {
			return bad("topic %q has no state", t)
		}
		for p, ps := range ts.Partitions {
			if ps == nil || p < 0 || ps.Next < 0 {
				return bad("topic %q partition %d: state %+v", t, p, ps)
			}
		}
	}
	tmpPrefix := runDir(m.Run) + "/"
	for _, f := range m.Files {
		if !strings.HasPrefix(f.Tmp, tmpPrefix) || !inWarehouse(f.Tmp) {
			return bad("file %q is not in the run's directory %s", f.Tmp, runDir(m.Run))
		}
		if !inWarehouse(f.Final) || isState(f.Final) {
			return bad("file %q would be moved to %q, outside the warehouse's data", f.Tmp, f.Final)
		}
	}
	for _, dir := range m.Markers {
		if !inWarehouse(dir) || isState(dir) {
			return bad("marker directory %q is outside the warehouse's data", dir)
		}
	}
	return &m, nil
}

// inWarehouse reports whether name is a clean relative warehouse path.
func inWarehouse(name string) bool {
	return name != "" && name != "." && path.Clean(name) == name && !path.IsAbs(name) &&
		name != ".." && !strings.HasPrefix(name, "../") && !strings.Contains(name, "\\")
}

func isState(name string) bool { return name == stateDir || strings.HasPrefix(name, stateDir+"/") }

// manifestTopics returns the topics of a manifest, sorted.
func (m *Manifest) topicNames() []string {
	names := make([]string, 0, len(m.Topics))
	for t := range m.Topics {
		names = append(names, t)
	}
	sort.Strings(names)
	return names
}

func subset(topics []string, held map[string]bool) bool {
	for _, t := range topics {
		if !held[t] {
			return false
		}
	}
	return true
}

// loadState returns the newest state of each topic in topics (nil for a
// topic never loaded) and the highest sequence number committed so far.
func loadState(w warehouse.FS, topics []string) (map[string]*TopicState, int64, error) {
	commits, err := listCommits(w)
	if err != nil {
		return nil, 0, err
	}
	state := make(map[string]*TopicState, len(topics))
	var maxSeq int64
	if len(commits) > 0 {
		maxSeq = commits[len(commits)-1].seq
	}
	missing := len(topics)
	for i := len(commits) - 1; i >= 0 && missing > 0; i-- {
		m, err := readManifest(w, commits[i].name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned meanwhile by a run of other topics
		}
		if err != nil {
			return nil, 0, err
		}
		for _, t := range topics {
			if _, done := state[t]; done {
				continue
			}
			if ts, ok := m.Topics[t]; ok {
				state[t] = ts
				missing--
			}
		}
	}
	return state, maxSeq, nil
}

// mover finishes committed runs: it moves files into place, writes
// _SUCCESS markers and removes the run's directory. Every step may be
// repeated, so a run cut short at any point is finished by the next.
type mover struct {
	w     warehouse.FS
	log   *slog.Logger
	fault func(FaultPoint) error
	// tryLock takes the locks of topics this run does not hold, without
	// waiting, so that a dead run over more topics than this one can be
	// cleaned up too; ok is false if any is held by a live run.
	tryLock func(topics []string) (release func(), ok bool)
}

// owns reports whether the mover may act on a run over topics: they are
// all held, or the missing ones could be locked (then release must be
// called when done).
func (mv *mover) owns(topics []string, held map[string]bool) (release func(), ok bool) {
	var missing []string
	for _, t := range topics {
		if !held[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return func() {}, true
	}
	if mv.tryLock == nil {
		return nil, false
	}
	return mv.tryLock(missing)
}

func (mv *mover) finish(m *Manifest) error {
	for i, f := range m.Files {
		if err := mv.move(f); err != nil {
			return fmt.Errorf("run %s: moving %s into place: %w", m.Run, f.Final, err)
		}
		if i == 0 && mv.fault != nil {
			if err := mv.fault(FaultMidMove); err != nil {
				return errCrash{err}
			}
		}
	}
	for _, dir := range m.Markers {
		marker := path.Join(dir, successName)
		ok, err := warehouse.Exists(mv.w, marker)
		if err != nil {
			return fmt.Errorf("run %s: %w", m.Run, err)
		}
		if !ok {
			if err := warehouse.WriteFile(mv.w, marker, nil); err != nil {
				return fmt.Errorf("run %s: writing %s: %w", m.Run, marker, err)
			}
		}
	}
	if err := mv.w.RemoveAll(runDir(m.Run)); err != nil {
		return fmt.Errorf("run %s: removing its directory: %w", m.Run, err)
	}
	return nil
}

// move puts one file in place. Already moved is fine; missing from both
// places means the warehouse lost a committed file, which is reported.
func (mv *mover) move(f FileEntry) error {
	err := mv.w.Rename(f.Tmp, f.Final)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if ok, serr := warehouse.Exists(mv.w, f.Final); serr != nil {
		return serr
	} else if ok {
		return nil // moved by an earlier attempt
	}
	return fmt.Errorf("committed file is in neither %s nor %s", f.Tmp, f.Final)
}

// recoverRuns finishes every committed run and deletes every uncommitted
// one whose owner is dead: one whose topics are all held by this run or
// could be locked now (a live owner would hold them). It returns the runs
// it recovered and discarded.
func (mv *mover) recoverRuns(held map[string]bool) (recovered, discarded []string, err error) {
	commits, err := listCommits(mv.w)
	if err != nil {
		return nil, nil, err
	}
	committed := make(map[string]bool, len(commits))
	for _, c := range commits {
		committed[c.run] = true
	}
	runs, err := mv.w.ReadDir(runsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("listing %s in %s: %w", runsDir, mv.w, err)
	}
	pending := make(map[string]fs.FileInfo, len(runs))
	for _, fi := range runs {
		pending[fi.Name()] = fi
	}
	for _, c := range commits {
		if pending[c.run] == nil {
			continue // finished
		}
		m, err := readManifest(mv.w, c.name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		release, ok := mv.owns(m.topicNames(), held)
		if !ok {
			continue // a live run's, in its move phase
		}
		mv.log.Warn("finishing a committed run that was cut short", "run", m.Run, "files", len(m.Files))
		err = mv.finish(m)
		release()
		if err != nil {
			return nil, nil, err
		}
		recovered = append(recovered, m.Run)
	}
	for name, fi := range pending {
		if committed[name] {
			continue
		}
		var info runInfo
		err := readJSON(mv.w, path.Join(runDir(name), runInfoName), &info)
		release := func() {}
		switch {
		case err == nil:
			var ok bool
			if release, ok = mv.owns(info.Topics, held); !ok {
				continue // a live run's
			}
		case errors.Is(err, fs.ErrNotExist) || isSyntaxError(err):
			// Killed before its run.json was complete: it cannot have
			// written anything else. Leave a fresh one to its owner.
			if time.Since(fi.ModTime()) < time.Hour {
				continue
			}
		default:
			return nil, nil, err
		}
		mv.log.Warn("deleting the files of an uncommitted run", "run", name)
		err = mv.w.RemoveAll(runDir(name))
		release()
		if err != nil {
			return nil, nil, fmt.Errorf("deleting uncommitted run %s: %w", name, err)
		}
		discarded = append(discarded, name)
	}
	sort.Strings(recovered)
	sort.Strings(discarded)
	return recovered, discarded, nil
}

func isSyntaxError(err error) bool {
	var se *json.SyntaxError
	var ue *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &ue)
}

// prune deletes committed manifests that are finished and superseded, for
// every topic they hold, by a newer manifest; it touches only manifests
// whose topics are all held. Offsets live on in the newest manifests.
func (mv *mover) prune(held map[string]bool) error {
	commits, err := listCommits(mv.w)
	if err != nil {
		return err
	}
	newest := map[string]int64{} // topic → index in commits of its newest manifest
	manifests := make([]*Manifest, len(commits))
	for i := len(commits) - 1; i >= 0; i-- {
		m, err := readManifest(mv.w, commits[i].name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		manifests[i] = m
		for t := range m.Topics {
			if _, ok := newest[t]; !ok {
				newest[t] = int64(i)
			}
		}
	}
	for i, m := range manifests {
		if m == nil || !subset(m.topicNames(), held) {
			continue
		}
		if slices.ContainsFunc(m.topicNames(), func(t string) bool { return newest[t] == int64(i) }) {
			continue
		}
		if ok, err := warehouse.Exists(mv.w, runDir(m.Run)); err != nil || ok {
			continue // not finished yet
		}
		if err := mv.w.Remove(commits[i].name); err != nil {
			return err
		}
	}
	return nil
}
