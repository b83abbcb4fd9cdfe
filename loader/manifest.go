package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	// Audit is what the run counted for the audit's warehouse tier (runs
	// with an AuditConfig that loaded something): committed here, with
	// the data and offsets it describes, so no crash loses or doubles it.
	Audit *ManifestAudit `json:"audit,omitempty"`
	// Late counts, per hour directory that already had its _SUCCESS, the
	// records the run loaded into it (recorded in _LATE-<run> there).
	Late map[string]int64 `json:"late,omitempty"`
	// Tables are the Iceberg table commits of a run with Config.Table,
	// by topic.
	Tables map[string]*TableCommit `json:"tables,omitempty"`
	// Fenced are runs whose files this commit's run discarded (recovery
	// of runs whose locks ran out): the commit that fences them, holding
	// their topics' unchanged state, so that they can never commit after
	// it (fence.go).
	Fenced []string `json:"fenced,omitempty"`
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
	// Locks are the partition leases of a partition-sharing run
	// (Config.MaxPartitions), which holds no topic lock until its commit.
	Locks []string `json:"locks,omitempty"`
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
	run  string // "" unless legacy: then the manifest says
	// legacy: named <seq>-<run>.json, by a loader from before commits
	// were created exclusively by sequence number.
	legacy bool
}

// listCommits returns the committed manifests, in commit order.
func listCommits(w warehouse.FS) ([]commitEntry, error) {
	commits, _, err := listCommitLog(w)
	return commits, err
}

// listCommitLog returns the committed manifests, in commit order, and the
// highest sequence number ever committed, which may be a pruned commit's:
// pruning leaves an empty file under a commit's name (a tombstone), so that
// the name is never free again and a run that read the commits long ago
// (paused since) cannot create it; the floor stands for the tombstones it
// replaced (floor.go).
func listCommitLog(w warehouse.FS) (commits []commitEntry, last int64, err error) {
	cl, err := scanCommits(w)
	if err != nil {
		return nil, 0, err
	}
	return cl.commits, cl.last, nil
}

// scanCommits lists _tributary/commits. A floor deleted between the
// listing and its read was replaced by a higher one: it lists again.
func scanCommits(w warehouse.FS) (*commitLog, error) {
	for range 10 {
		cl, err := scanCommitsOnce(w)
		if !errors.Is(err, fs.ErrNotExist) {
			return cl, err
		}
	}
	return nil, fmt.Errorf("listing %s in %s: its floor changed under ten listings in a row; try again", commitsDir, w)
}

func scanCommitsOnce(w warehouse.FS) (*commitLog, error) {
	infos, err := w.ReadDir(commitsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return &commitLog{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", commitsDir, w, err)
	}
	cl := &commitLog{}
	for _, fi := range infos {
		if n, ok := parseFloorName(fi.Name()); ok {
			cl.floors = append(cl.floors, n)
			continue
		}
		seq, run, legacy, ok := parseCommitName(fi.Name())
		if !ok {
			continue
		}
		name := path.Join(commitsDir, fi.Name())
		cl.last = max(cl.last, seq)
		if !legacy && fi.Size() == 0 {
			cl.tombstones = append(cl.tombstones, name)
			continue
		}
		cl.commits = append(cl.commits, commitEntry{name: name, seq: seq, run: run, legacy: legacy})
	}
	if len(cl.floors) > 0 {
		n := slices.Max(cl.floors)
		if cl.floor, err = readFloor(w, n); err != nil {
			return nil, err
		}
		cl.last = max(cl.last, n)
		cl.commits = slices.DeleteFunc(cl.commits, func(c commitEntry) bool {
			if c.legacy || !cl.floor.voids(c.seq) {
				return false
			}
			cl.void = append(cl.void, c.name)
			return true
		})
	}
	sort.Slice(cl.commits, func(i, j int) bool {
		if cl.commits[i].seq != cl.commits[j].seq {
			return cl.commits[i].seq < cl.commits[j].seq
		}
		return cl.commits[i].name < cl.commits[j].name
	})
	return cl, nil
}

func readManifest(w warehouse.FS, name string) (*Manifest, error) {
	data, err := readStateFile(w, name)
	if err != nil {
		return nil, err
	}
	seq, run, legacy, ok := parseCommitName(path.Base(name))
	if !ok || !legacy {
		run = ""
	}
	if ok && !legacy && len(data) == 0 {
		// Pruned since it was listed: its tombstone.
		return nil, fmt.Errorf("%s: %s was pruned: %w", w, name, fs.ErrNotExist)
	}
	m, err := decodeManifest(data, run)
	if err == nil && ok && !legacy && m.Seq != seq {
		err = fmt.Errorf("%w: it says commit %d, its name %d", errBadManifest, m.Seq, seq)
	}
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
	for dir, n := range m.Late {
		if !inWarehouse(dir) || isState(dir) || n < 0 {
			return bad("late records %d in %q, outside the warehouse's data", n, dir)
		}
	}
	for t, tc := range m.Tables {
		if tc == nil || !inWarehouse(tc.Dir) || isState(tc.Dir) || m.Topics[t] == nil {
			return bad("table of topic %q: %+v", t, tc)
		}
	}
	if m.Audit != nil {
		if err := m.Audit.check(); err != nil {
			return bad("%v", err)
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
	commits, maxSeq, err := listCommitLog(w)
	if err != nil {
		return nil, 0, err
	}
	state := make(map[string]*TopicState, len(topics))
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

// manifest builds the run's commit record: files, the topics' new state,
// and the hours that are now complete.
func (r *run) manifest(plans []*partPlan, state map[string]*TopicState, listedAt time.Time) *Manifest {
	m := &Manifest{Version: manifestVersion, Run: r.id, Started: r.started, Topics: map[string]*TopicState{}, Lost: r.sum.Lost, Audit: r.auditRecord(plans)}
	hours := map[string]map[string]bool{}
	for _, pl := range plans {
		ts := m.Topics[pl.topic]
		if ts == nil {
			ts = &TopicState{Partitions: map[int32]*PartitionState{}}
			if prev := state[pl.topic]; prev != nil {
				for p, ps := range prev.Partitions {
					c := *ps
					ts.Partitions[p] = &c
				}
			}
			m.Topics[pl.topic] = ts
			hours[pl.topic] = map[string]bool{}
			if prev := state[pl.topic]; prev != nil {
				for _, h := range prev.PendingHours {
					hours[pl.topic][h] = true
				}
			}
		}
		ps := &PartitionState{Next: pl.next}
		if pl.prev != nil {
			ps.Progress = pl.prev.Progress
		}
		switch {
		case pl.next >= pl.end:
			ps.Progress = max(ps.Progress, listedAt.UnixMilli())
		case pl.writer.records > 0:
			ps.Progress = max(ps.Progress, pl.writer.lastTime)
		}
		ts.Partitions[pl.part] = ps
		m.Files = append(m.Files, pl.writer.files...)
		for h := range pl.writer.hours {
			hours[pl.topic][h] = true
		}
		r.sum.InputBytes += pl.inputBytes
		r.sum.Partitions = append(r.sum.Partitions, PartitionSummary{
			Topic: pl.topic, Partition: pl.part, From: pl.start, To: pl.next, End: pl.end,
			Records: pl.records - pl.writer.errCount, Errors: pl.writer.errCount,
		})
	}
	grace := r.cfg.SuccessGrace.Milliseconds()
	for topic, ts := range m.Topics {
		minProgress := int64(-1)
		for _, ps := range ts.Partitions {
			if minProgress < 0 || ps.Progress < minProgress {
				minProgress = ps.Progress
			}
		}
		for h := range hours[topic] {
			start, err := warehouse.HourStart(h)
			if err != nil {
				continue
			}
			if start.Add(time.Hour).UnixMilli()+grace <= minProgress {
				m.Markers = append(m.Markers, h)
			} else {
				ts.PendingHours = append(ts.PendingHours, h)
			}
		}
		sort.Strings(ts.PendingHours)
	}
	sort.Strings(m.Markers)
	for _, f := range m.Files {
		if f.Kind == "data" {
			r.sum.Files++
		}
	}
	r.sum.Markers = m.Markers
	return m
}
