package mirror

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Auditor is how the audit counts the analysis cluster as a tier: the
// mirror calls Copied once for every record the target acknowledged, with
// the record as it was written there (value with the target's schema id,
// origin hop added). The copy is exactly once (see the package doc), so a
// record is reported twice only in the windows the package doc names,
// which the audit then sees as duplicates.
//
// Copied is called from the producer's acknowledgement path, concurrently
// for different partitions: it must be safe for concurrent use and fast
// (count, do not do I/O).
type Auditor interface {
	Copied(source string, r *kgo.Record)
}

// WindowCounter is an Auditor that counts copied records per source, topic
// and time window, the window chosen from the record's timestamp (which
// producers set to the event's time). The audit package can replace it by
// an Auditor that reads the event header's time from the Avro body instead.
type WindowCounter struct {
	// Window is the width of a window; default one minute.
	Window time.Duration
	// Keep is how far behind the newest window counted a window is kept
	// (for the status); default a day. Older ones are forgotten, so that a
	// mirror that runs for months does not keep every window.
	Keep time.Duration

	mu     sync.Mutex
	counts map[WindowKey]int64
	newest time.Time // start of the newest window counted
	pruned time.Time // newest when windows were last forgotten
}

// WindowKey names one window of one topic from one source.
type WindowKey struct {
	Source string    `json:"source"`
	Topic  string    `json:"topic"`
	Start  time.Time `json:"start"`
}

// WindowCount is the number of records copied in one window.
type WindowCount struct {
	WindowKey
	Records int64 `json:"records"`
}

// Copied counts r in its window.
func (w *WindowCounter) Copied(source string, r *kgo.Record) {
	width := w.Window
	if width <= 0 {
		width = time.Minute
	}
	k := WindowKey{Source: source, Topic: r.Topic, Start: r.Timestamp.Truncate(width).UTC()}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts == nil {
		w.counts = map[WindowKey]int64{}
	}
	w.counts[k]++
	if k.Start.After(w.newest) {
		w.newest = k.Start
	}
	keep := w.Keep
	if keep <= 0 {
		keep = 24 * time.Hour
	}
	if w.newest.Sub(w.pruned) >= keep/24 { // now and then, not per record
		w.pruned = w.newest
		w.forgetLocked(w.newest.Add(-keep))
	}
}

// Counts returns every window counted so far, sorted by start, source and
// topic.
func (w *WindowCounter) Counts() []WindowCount {
	w.mu.Lock()
	out := make([]WindowCount, 0, len(w.counts))
	for k, n := range w.counts {
		out = append(out, WindowCount{k, n})
	}
	w.mu.Unlock()
	slices.SortFunc(out, func(a, b WindowCount) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(a.Topic, b.Topic)
	})
	return out
}

// Forget drops the windows that started before t, once the audit has taken
// them, so that a long-running mirror does not keep every window forever.
func (w *WindowCounter) Forget(before time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forgetLocked(before)
}

func (w *WindowCounter) forgetLocked(before time.Time) {
	for k := range w.counts {
		if k.Start.Before(before) {
			delete(w.counts, k)
		}
	}
}

// sendAuditor is an Auditor told of each copy before it is produced
// (Sending; an error stops the copy) and of a copy the target did not
// acknowledge (Failed): one that counts through a write-ahead log, so
// that what it counted survives a kill (AuditTier with a WAL publisher).
type sendAuditor interface {
	Sending(ctx context.Context, source string, r *kgo.Record) error
	Failed(source string, r *kgo.Record)
}

// Auditors reports every record to each of its auditors in turn, e.g. a
// WindowCounter for the status and an AuditTier for the audit.
type Auditors []Auditor

// Copied reports r to every auditor.
func (as Auditors) Copied(source string, r *kgo.Record) {
	for _, a := range as {
		a.Copied(source, r)
	}
}

// Sending tells the auditors that want to know of r before it is
// produced.
func (as Auditors) Sending(ctx context.Context, source string, r *kgo.Record) error {
	for _, a := range as {
		if sa, ok := a.(sendAuditor); ok {
			if err := sa.Sending(ctx, source, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Failed tells the auditors that want to know that r was not
// acknowledged.
func (as Auditors) Failed(source string, r *kgo.Record) {
	for _, a := range as {
		if sa, ok := a.(sendAuditor); ok {
			sa.Failed(source, r)
		}
	}
}

// windowCounter finds a WindowCounter among the configured auditors.
func windowCounter(a Auditor) *WindowCounter {
	switch a := a.(type) {
	case *WindowCounter:
		return a
	case Auditors:
		for _, x := range a {
			if wc := windowCounter(x); wc != nil {
				return wc
			}
		}
	}
	return nil
}
