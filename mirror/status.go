package mirror

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Status is a snapshot of the mirror's progress.
type Status struct {
	Started time.Time      `json:"started"`
	Sources []SourceStatus `json:"sources"`
	// Windows are the per-window counts when Config.Auditor is, or
	// includes (Auditors), a *WindowCounter.
	Windows []WindowCount `json:"windows,omitempty"`
}

// SourceStatus sums up one source cluster.
type SourceStatus struct {
	Name       string            `json:"name"`
	Copied     int64             `json:"copied"`
	Bytes      int64             `json:"bytes"`
	Rate       float64           `json:"rate"`      // records/s
	ByteRate   float64           `json:"byte_rate"` // key+value bytes/s
	Lag        int64             `json:"lag"`
	Partitions []PartitionStatus `json:"partitions"`
}

// PartitionStatus is one source partition this process copies.
type PartitionStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// TargetPartition is -1 when records are placed by key hash.
	TargetPartition int32 `json:"target_partition"`
	// Next is the next offset to fetch; Safe is the offset below which the
	// target has everything; Resumed is where this process started
	// copying the partition, as read from the target's tail.
	Next    int64 `json:"next"`
	Safe    int64 `json:"safe"`
	Resumed int64 `json:"resumed"`
	// Stopped says why the partition no longer copies (a record the
	// target refuses, an unresolvable schema id); empty while it copies.
	Stopped string `json:"stopped,omitempty"`
	// HighWatermark is the source's, -1 while unknown; Lag is HighWatermark
	// minus Safe: records not yet safely in the target.
	HighWatermark int64 `json:"high_watermark"`
	Lag           int64 `json:"lag"`
	InFlight      int64 `json:"in_flight"`
	// Copied and Bytes count what the target acknowledged since this
	// process started copying the partition; Rate (records/s) and ByteRate
	// (key+value bytes/s) are averaged over the last seconds.
	Copied   int64   `json:"copied"`
	Bytes    int64   `json:"bytes"`
	Rate     float64 `json:"rate"`
	ByteRate float64 `json:"byte_rate"`
	// Skipped counts records not copied because they came from the target;
	// UnknownSchemas those copied unchanged under CopyUnknown.
	Skipped        int64 `json:"skipped"`
	UnknownSchemas int64 `json:"unknown_schemas"`
	// Lost counts records the source deleted (retention) before they
	// were copied.
	Lost int64 `json:"lost,omitempty"`
}

// Status returns the current progress.
func (m *Mirror) Status() Status {
	m.mu.Lock()
	sources, started := m.sources, m.started
	rates := m.meter.rates
	m.mu.Unlock()
	st := Status{Started: started, Sources: []SourceStatus{}}
	for _, s := range sources {
		ss := SourceStatus{Name: s.Name, Partitions: []PartitionStatus{}}
		for _, p := range s.partitions() {
			ps := p.status()
			ps.Rate, ps.ByteRate = rates[p].records, rates[p].bytes
			ss.Copied += ps.Copied
			ss.Bytes += ps.Bytes
			ss.Rate += ps.Rate
			ss.ByteRate += ps.ByteRate
			ss.Lag += ps.Lag
			ss.Partitions = append(ss.Partitions, ps)
		}
		slices.SortFunc(ss.Partitions, func(a, b PartitionStatus) int {
			if c := strings.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			return int(a.Partition - b.Partition)
		})
		st.Sources = append(st.Sources, ss)
	}
	if wc := windowCounter(m.cfg.Auditor); wc != nil {
		st.Windows = wc.Counts()
	}
	return st
}

func (p *partition) status() PartitionStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := PartitionStatus{
		Topic: p.topic, Partition: p.partition, TargetPartition: p.target,
		Next: p.next, Safe: p.acks.safe, Resumed: p.resumed, HighWatermark: p.hwm,
		InFlight: p.inflight.Load(), Copied: p.copied.Load(), Bytes: p.bytes.Load(),
		Skipped: p.skipped.Load(), UnknownSchemas: p.unknown.Load(), Lost: p.lost.Load(),
	}
	if p.stopped != nil {
		ps.Stopped = p.stopped.Error()
	}
	if p.hwm >= 0 {
		ps.Lag = max(0, p.hwm-max(p.acks.safe, 0))
	}
	return ps
}

// Handler serves the status as JSON on GET (any path): for operators
// (curl) and monitoring.
func (m *Mirror) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET")
			http.Error(w, `{"error_code":405,"message":"use GET"}`, http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(m.Status())
	})
}

// meter keeps per-partition rates, smoothed over a few seconds.
type meter struct {
	rates map[*partition]rate
	last  map[*partition]rate // the counters at the previous tick
	at    time.Time
}

type rate struct{ records, bytes float64 }

const (
	meterTick = time.Second
	// stallAfter is how long the target may leave records unacknowledged
	// before the mirror says it is waiting for it.
	stallAfter = 10 * time.Second
)

// watch updates the rates every second, logs a progress line per source
// every Config.LogInterval, and says when the target stops acknowledging
// and when it is back.
func (m *Mirror) watch(ctx context.Context) {
	t := time.NewTicker(meterTick)
	defer t.Stop()
	lastLog := time.Now()
	var stalled time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.tick(now)
			st := m.Status()
			var inflight int64
			for _, s := range st.Sources {
				for _, p := range s.Partitions {
					inflight += p.InFlight
				}
			}
			lastAck := time.Unix(0, m.lastAck.Load())
			switch {
			case stalled.IsZero() && inflight > 0 && now.Sub(lastAck) > stallAfter:
				stalled = lastAck
				m.cfg.Logger.Warn("the target has not acknowledged anything for a while; waiting for it",
					"since", now.Sub(lastAck).Round(time.Second), "in_flight", inflight, "target", m.cfg.Target)
			case !stalled.IsZero() && lastAck.After(stalled):
				m.cfg.Logger.Info("the target acknowledges again; resuming", "waited", lastAck.Sub(stalled).Round(time.Second))
				stalled = time.Time{}
			}
			if m.cfg.LogInterval > 0 && now.Sub(lastLog) >= m.cfg.LogInterval {
				lastLog = now
				for _, s := range st.Sources {
					m.cfg.Logger.Info("mirror progress", "source", s.Name, "partitions", len(s.Partitions),
						"copied", s.Copied, "records_per_s", int64(s.Rate), "mb_per_s", float64(int64(s.ByteRate/1e4))/100, "lag", s.Lag)
				}
			}
		}
	}
}

// tick recomputes the rates as an exponentially weighted moving average
// over about five seconds.
func (m *Mirror) tick(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := &m.meter
	if mt.rates == nil {
		mt.rates, mt.last = map[*partition]rate{}, map[*partition]rate{}
	}
	dt := now.Sub(mt.at).Seconds()
	mt.at = now
	rates := make(map[*partition]rate, len(mt.rates))
	last := make(map[*partition]rate, len(mt.last))
	for _, s := range m.sources {
		for _, p := range s.partitions() {
			n := rate{float64(p.copied.Load()), float64(p.bytes.Load())}
			prev, ok := mt.last[p]
			last[p] = n
			if !ok || dt <= 0 || dt > 10 {
				continue
			}
			const alpha = 0.2 // about five ticks
			old := mt.rates[p]
			rates[p] = rate{
				records: alpha*(n.records-prev.records)/dt + (1-alpha)*old.records,
				bytes:   alpha*(n.bytes-prev.bytes)/dt + (1-alpha)*old.bytes,
			}
		}
	}
	// Replaced, not mutated: Status reads the old maps without the lock.
	mt.rates, mt.last = rates, last
}
