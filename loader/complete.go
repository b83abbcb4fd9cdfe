package loader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/loader/warehouse"
)

// Markers in an hour directory besides warehouse.SuccessName: an hour the
// audit did not find complete within Config.CompleteMaxWait, and records
// loaded into an hour after its _SUCCESS (one file per run that did).
const (
	incompleteName = "_INCOMPLETE"
	latePrefix     = "_LATE-"
)

// HourMarker is the content of _SUCCESS and _INCOMPLETE: what the marker
// certifies, so that whoever reads the hour knows what "complete" meant.
type HourMarker struct {
	Certifies string    `json:"certifies"`
	By        string    `json:"by"` // CompleteByProgress or CompleteByAudit
	Dir       string    `json:"dir"`
	Run       string    `json:"run"`
	Written   time.Time `json:"written"`
	// Grace is Config.SuccessGrace: every partition was loaded this long
	// past the hour's end.
	Grace string `json:"success_grace"`
	// Audit holds the audit's figures for the hour (By audit).
	Audit *HourFigures `json:"audit,omitempty"`
}

// HourFigures are the audit's counts of one topic's hour.
type HourFigures struct {
	// Produced is what the producers counted, Warehouse what the
	// warehouse tier counted; Missing and Excess are by header server.
	Produced     int64   `json:"produced"`
	Warehouse    int64   `json:"warehouse"`
	Missing      int64   `json:"missing"`
	Excess       int64   `json:"excess"`
	Completeness float64 `json:"completeness"`
	Threshold    float64 `json:"threshold"`
	// Status is the audit's status of the hour: monitoring-lost means a
	// monitoring event is known lost and the figures are incomplete.
	Status  string `json:"status"`
	MaxWait string `json:"max_wait,omitempty"`
}

// LateRecord is the content of _LATE-<run>: records a run loaded into an
// hour that already had its _SUCCESS.
type LateRecord struct {
	Run       string    `json:"run"`
	Records   int64     `json:"records"`
	Committed time.Time `json:"committed"`
	Note      string    `json:"note"`
}

// checkHours settles the run's hour markers before its commit: the hours
// that already have _SUCCESS and get records from this run are recorded in
// the manifest (m.Late, a _LATE file each after the moves); with
// CompleteByAudit, hours that progress alone would mark stay pending until
// the audit finds them complete (completeHours); hours whose marker exists
// are no longer pending.
func (r *run) checkHours(m *Manifest) error {
	marked := map[string]bool{}
	hasMarker := func(dir string, names ...string) (bool, error) {
		if v, ok := marked[dir]; ok {
			return v, nil
		}
		for _, n := range names {
			ok, err := warehouse.Exists(r.w, path.Join(dir, n))
			if err != nil {
				return false, fmt.Errorf("checking the markers of %s: %w", dir, err)
			}
			if ok {
				marked[dir] = true
				return true, nil
			}
		}
		marked[dir] = false
		return false, nil
	}
	wrote := map[string]bool{}
	for _, f := range m.Files {
		if f.Kind != "data" {
			continue
		}
		dir := path.Dir(f.Final)
		wrote[dir] = true
		ok, err := hasMarker(dir, warehouse.SuccessName)
		if err != nil {
			return err
		}
		if ok {
			if m.Late == nil {
				m.Late = map[string]int64{}
			}
			m.Late[dir] += f.Records
		}
	}
	clear(marked)
	if r.cfg.CompleteBy == CompleteByAudit {
		for _, dir := range m.Markers {
			if ts := m.Topics[r.hourTopic(m, dir)]; ts != nil {
				ts.PendingHours = append(ts.PendingHours, dir)
			}
		}
		m.Markers = nil
	}
	for _, ts := range m.Topics {
		keep := ts.PendingHours[:0]
		for _, h := range ts.PendingHours {
			// An hour marked incomplete that gets records is judged
			// again: it may be complete now.
			names := []string{warehouse.SuccessName, incompleteName}
			if wrote[h] {
				names = names[:1]
			}
			done, err := hasMarker(h, names...)
			if err != nil {
				return err
			}
			if !done {
				keep = append(keep, h)
			}
		}
		ts.PendingHours = keep
		sort.Strings(ts.PendingHours)
	}
	r.sum.Markers = m.Markers
	for dir := range m.Late {
		r.sum.Late = append(r.sum.Late, dir)
	}
	sort.Strings(r.sum.Late)
	return nil
}

// hourTopic returns the topic of m whose hour directory dir is:
// topic/YYYY/MM/DD/HH, topic/dt=YYYY-MM-DD/hr=HH, or in a table,
// <table>/<topic>/data/dt=YYYY-MM-DD/hr=HH. The longest prefix wins, so a
// topic named like another's prefix ("a" and "a/b" cannot both be topics,
// but a table namespace may be a topic's name) is told apart.
func (r *run) hourTopic(m *Manifest, dir string) string {
	best, bestLen := "", 0
	for t := range m.Topics {
		root := t
		if r.cfg.Table != "" {
			root = r.tableDir(t)
		}
		if strings.HasPrefix(dir, root+"/") && len(root) > bestLen {
			best, bestLen = t, len(root)
		}
	}
	return best
}

// progressMarker is the _SUCCESS of an hour complete by progress.
func (mv *mover) progressMarker(m *Manifest, dir string) []byte {
	return markerJSON(HourMarker{
		Certifies: "every partition of the topic was loaded past the end of the hour plus the grace period",
		By:        CompleteByProgress, Dir: dir, Run: m.Run, Written: m.Committed, Grace: mv.grace.String(),
	})
}

func markerJSON(v any) []byte {
	b, _ := json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}

// writeLate records the records a run loaded into hours already marked
// complete. Repeatable: the content depends on the manifest only.
func (mv *mover) writeLate(m *Manifest) error {
	for dir, n := range m.Late {
		rec := LateRecord{Run: m.Run, Records: n, Committed: m.Committed,
			Note: "records loaded into this hour after its _SUCCESS was written"}
		if err := warehouse.WriteFile(mv.w, path.Join(dir, latePrefix+m.Run), markerJSON(rec)); err != nil {
			return fmt.Errorf("run %s: recording late records in %s: %w", m.Run, dir, err)
		}
		mv.log.Warn("records loaded into an hour already marked complete", "dir", dir, "records", n)
	}
	return nil
}

// completeHours writes the markers of the pending hours that progress says
// are loaded (CompleteByAudit): _SUCCESS once the audit's warehouse tier
// holds what the producers counted in the hour (or the threshold), or
// _INCOMPLETE with the figures once CompleteMaxWait has passed since the
// hour's end. Other hours wait for a later run.
func (r *run) completeHours(ctx context.Context, m *Manifest) error {
	type hour struct {
		topic, dir string
		start      time.Time
	}
	var hours []hour
	grace := r.cfg.SuccessGrace
	for t, ts := range m.Topics {
		if !r.held[t] {
			continue
		}
		minProgress := int64(-1)
		for _, ps := range ts.Partitions {
			if minProgress < 0 || ps.Progress < minProgress {
				minProgress = ps.Progress
			}
		}
		for _, h := range ts.PendingHours {
			start, err := warehouse.HourStart(h)
			if err != nil {
				continue
			}
			if start.Add(time.Hour+grace).UnixMilli() <= minProgress {
				hours = append(hours, hour{t, h, start})
			}
		}
	}
	if len(hours) == 0 {
		return nil
	}
	sort.Slice(hours, func(i, j int) bool { return hours[i].dir < hours[j].dir })
	since := hours[0].start
	for _, h := range hours {
		if h.start.Before(since) {
			since = h.start
		}
	}
	ac := r.cfg.Audit
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ac.Timeout)
	defer cancel()
	reg, err := r.auditRegistry()
	if err != nil {
		return err
	}
	st := audit.NewStore()
	src := audit.Source{Brokers: ac.Brokers, Registry: reg, Topic: ac.Topic, Opts: r.cfg.kgoOpts, Logger: r.log}
	// Producers publish a window soon after it closes, and this run
	// published the warehouse tier's counts just now.
	if _, err := audit.Load(ctx, src, since.Add(-time.Hour), st); err != nil && !errors.Is(err, audit.ErrNoAuditTopic) {
		return fmt.Errorf("reading the audit to complete hours: %w", err)
	}
	now := r.cfg.Now()
	tags := map[string][]time.Time{} // table topic → hours complete
	defer func() {
		for t, hs := range tags {
			if err := tagIceHours(r.batch, r.cat, r.tableDir(t), r.id, hs, now); err != nil {
				r.log.Error("hours complete but not tagged in the table; their _SUCCESS markers are written", "table", r.tableDir(t), "err", err)
			}
		}
	}()
	for _, h := range hours {
		fig := r.hourFigures(st, h.topic, h.start, now)
		marker := HourMarker{By: CompleteByAudit, Dir: h.dir, Run: r.id, Written: now.UTC(), Grace: grace.String(), Audit: &fig}
		var name string
		switch {
		case fig.Status != audit.StatusMonitoringLost && fig.Completeness >= fig.Threshold:
			name = warehouse.SuccessName
			marker.Certifies = fmt.Sprintf("every partition was loaded past the end of the hour plus the grace period, and the audit's warehouse tier holds %v%% of the events the producers counted in the hour (at least %v%%)", fig.Completeness, fig.Threshold)
			r.sum.Markers = append(r.sum.Markers, h.dir)
			if r.cfg.Table != "" {
				tags[h.topic] = append(tags[h.topic], h.start)
			}
		case now.After(h.start.Add(time.Hour + r.cfg.CompleteMaxWait)):
			name = incompleteName
			fig.MaxWait = r.cfg.CompleteMaxWait.String()
			marker.Certifies = fmt.Sprintf("NOT complete: %s after the hour's end, the audit's warehouse tier holds %d of the %d events the producers counted (%v%%, %d missing; %s)",
				fig.MaxWait, fig.Warehouse, fig.Produced, fig.Completeness, fig.Missing, fig.Status)
			r.sum.Incomplete = append(r.sum.Incomplete, h.dir)
		default:
			r.log.Info("hour loaded but not yet complete by the audit; waiting", "dir", h.dir,
				"produced", fig.Produced, "warehouse", fig.Warehouse, "missing", fig.Missing, "status", fig.Status)
			continue
		}
		if err := warehouse.WriteFile(r.w, path.Join(h.dir, name), markerJSON(marker)); err != nil {
			return fmt.Errorf("writing %s: %w", path.Join(h.dir, name), err)
		}
		if name == warehouse.SuccessName {
			// Complete after all: the earlier verdict no longer holds.
			if err := r.w.Remove(path.Join(h.dir, incompleteName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing %s: %w", path.Join(h.dir, incompleteName), err)
			}
		}
		if name == incompleteName {
			r.log.Warn("hour marked incomplete: the audit did not find it complete in time", "dir", h.dir,
				"produced", fig.Produced, "warehouse", fig.Warehouse, "missing", fig.Missing)
		}
	}
	return nil
}

// hourFigures compares the warehouse tier with the producers for one
// topic's hour.
func (r *run) hourFigures(st *audit.Store, topic string, start, now time.Time) HourFigures {
	rep := st.Report(audit.Options{From: start, To: start.Add(time.Hour), Window: time.Hour, Topics: []string{topic},
		Tiers: []string{audit.TierWarehouse}, Expect: []string{audit.TierWarehouse}, Now: now})
	fig := HourFigures{Completeness: 100, Threshold: r.cfg.CompleteThreshold, Status: audit.StatusOK}
	for _, row := range rep.Rows {
		if row.Tier == audit.TierWarehouse {
			fig.Produced, fig.Warehouse, fig.Missing, fig.Excess = row.Produced, row.Received, row.Missing, row.Excess
			fig.Completeness = row.Completeness
			if row.Status == audit.StatusMonitoringLost {
				fig.Status = row.Status
			} else if row.Missing > 0 {
				fig.Status = audit.StatusMissing
			}
		}
	}
	return fig
}
