package audit

import "time"

// Options chooses what a report covers.
type Options struct {
	// From and To bound the windows reported: those starting in
	// [From, To). Zero: unbounded.
	From, To time.Time
	// Window is the report's window width; counts in narrower windows
	// that divide it are added up. Default: DefaultWindow.
	Window time.Duration
	// Topics and Tiers restrict the report; empty means all. The
	// baseline tier is always included.
	Topics, Tiers []string
	// Expect names the tiers every topic is expected in (besides the
	// baseline). Default: for each topic, the tiers that counted it.
	Expect []string
	// Baseline is the tier every other is compared with. Default:
	// TierProducer.
	Baseline string
	// Grace is how long after a window ends its counts may still grow
	// (late events, a mirror or loader catching up); windows inside it
	// are reported open and judged by no threshold. Default: one hour.
	Grace time.Duration
	// Now is the time the grace period is measured from. Default:
	// time.Now().
	Now time.Time
}

// DefaultGrace is how long a window stays open by default.
const DefaultGrace = time.Hour

// Statuses of a Row.
const (
	StatusOK             = "ok"
	StatusMissing        = "missing"
	StatusExcess         = "excess"     // events the producers did not count (foreign)
	StatusDuplicates     = "duplicates" // copies of counted events, nothing missing or foreign
	StatusMissingExcess  = "missing+excess"
	StatusOpen           = "open"            // inside the grace period: not judged
	StatusMonitoringLost = "monitoring-lost" // a monitoring event for it was lost: its counts are incomplete
	// StatusProducerIncomplete: a producer stopped before publishing its
	// counts of the window; shown, never judged.
	StatusProducerIncomplete = "producer-incomplete"
)

// Row compares one tier with the baseline for one topic and window.
// Missing and excess are computed per header server and added up, so a
// loss on one server is not hidden by duplicates from another.
type Row struct {
	Topic       string    `json:"topic"`
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	Tier        string    `json:"tier"`
	Produced    int64     `json:"produced"`
	Received    int64     `json:"received"`
	Missing     int64     `json:"missing"`
	// Excess counts events the producers did not count (foreign events;
	// and duplicates, where the tier cannot tell them apart: running
	// counters). Duplicates counts copies of events the tier holds more
	// than once, known where the tier was counted by a scan.
	Excess     int64 `json:"excess"`
	Duplicates int64 `json:"duplicates"`
	// Completeness is the percentage of produced events the tier holds,
	// duplicates not counted (they are Excess), rounded down so that a
	// shown 100 is never a loss.
	Completeness float64 `json:"completeness"`
	NoTime       int64   `json:"no_time"`
	Malformed    int64   `json:"malformed"`
	// LatencyP50 and LatencyP99 are how long after their header time the
	// tier counted the window's events, in milliseconds, as the top of a
	// power-of-two bucket (never understated by more than half); 0 when
	// the tier does not measure it (scans: files and logs keep no arrival
	// time).
	LatencyP50 int64  `json:"latency_p50_ms"`
	LatencyP99 int64  `json:"latency_p99_ms"`
	Status     string `json:"status"`
	Note       string `json:"note,omitempty"`
}

// Closed reports whether the row can be judged: its window is past the
// grace period and its counts are not known to be incomplete.
func (r Row) Closed() bool {
	return r.Status != StatusOpen && r.Status != StatusMonitoringLost && r.Status != StatusProducerIncomplete
}

// LostEvent is a monitoring event that never arrived: a gap in its
// publisher's sequence numbers. Window and Topics are known when a later
// event of the publisher listed it among its previous events.
type LostEvent struct {
	Tier      string    `json:"tier"`
	Publisher string    `json:"publisher"`
	Sequence  int64     `json:"sequence"`
	Located   bool      `json:"located"`
	Window    time.Time `json:"window_start,omitzero"`
	Topics    []string  `json:"topics,omitempty"`
}

// Report is the reconciliation of every tier against the baseline.
type Report struct {
	From, To    time.Time
	Window      time.Duration
	Grace       time.Duration
	GeneratedAt time.Time
	Baseline    string
	// Tiers in pipeline order, the baseline first.
	Tiers  []string
	Topics []string
	// Windows are the report's columns: every window from the first to
	// the last reported, empty ones included.
	Windows []time.Time
	// Rows are ordered by topic, window, then tier as in Tiers.
	Rows []Row
	Lost []LostEvent
	// Notes are findings about the monitoring itself: duplicated
	// monitoring events, publishers that stopped without a final event,
	// window widths that cannot be compared.
	Notes []string
}

// Below returns the closed rows of tiers other than the baseline whose
// completeness is under threshold (a percentage, e.g. 99.9).
func (r *Report) Below(threshold float64) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Tier != r.Baseline && row.Closed() && row.Completeness < threshold {
			out = append(out, row)
		}
	}
	return out
}

// Over returns the closed rows of tiers other than the baseline with more
// duplicates or more excess (foreign) events than max.
func (r *Report) Over(max int64) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Tier != r.Baseline && row.Closed() && (row.Excess > max || row.Duplicates > max) {
			out = append(out, row)
		}
	}
	return out
}

// completeness is (produced - missing) / produced in percent, rounded
// down to four decimals; 100 when nothing was produced.
func completeness(produced, missing int64) float64 {
	if produced == 0 {
		return 100
	}
	// Integer division floors exactly; float division would turn 999/1000
	// into 99.8999.
	return float64((produced-missing)*1_000_000/produced) / 1e4
}
