package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/schema"
)

// ScanConfig configures Scan.
type ScanConfig struct {
	// Brokers of the cluster to count. Required.
	Brokers []string
	// Registry resolves the events' schema ids. Required.
	Registry schema.Registry
	// Topics to count. Default: every topic whose name does not start
	// with "_" (internal topics such as _audit and _schemas).
	Topics []string
	// Window is the width of a counting window. Default: DefaultWindow.
	Window time.Duration
	// Opts are extra client options (TLS, SASL, ...).
	Opts []kgo.Opt
	// Logger receives a line per topic counted. Default: slog.Default().
	Logger *slog.Logger
	// HeaderField is the top-level field holding the events' header.
	// Default: schema.DefaultHeaderField.
	HeaderField string
	// MaxDistinct bounds the event identities held to tell duplicates
	// apart. Default: DefaultMaxDistinct; -1: do not tell them apart.
	MaxDistinct int
}

// Scan counts what a cluster holds now: every committed record of the
// topics, from each partition's start to its last stable offset (its high
// watermark when no transaction is open) when the scan began, by the
// header time window and server; records without a usable time or that do
// not decode are counted apart by the window of their record timestamp.
// It returns the counts and the topics counted. A registry that cannot be
// reached fails the scan rather than turn every record into "malformed".
func Scan(ctx context.Context, cfg ScanConfig) (*Counts, []string, error) {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	hr, err := NewHeaderReader(cfg.Registry, HeaderReaderConfig{Strict: true, HeaderField: cfg.HeaderField})
	if err != nil {
		return nil, nil, err
	}
	start, end, topics, err := scanRange(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	c := NewCounts()
	dc := newDistinctCounter(cfg.MaxDistinct, cfg.Logger)
	defer dc.fill(c)
	parts := map[string]map[int32]kgo.Offset{}
	remaining := 0
	left := map[string]map[int32]int64{}
	for t, ps := range end {
		for p, e := range ps {
			if start[t][p] >= e {
				continue
			}
			if parts[t] == nil {
				parts[t], left[t] = map[int32]kgo.Offset{}, map[int32]int64{}
			}
			parts[t][p] = kgo.NewOffset().At(start[t][p])
			left[t][p] = e
			remaining++
		}
	}
	if remaining == 0 {
		return c, topics, nil
	}
	// Committed records only, to the last stable offset listed: aborted
	// transactions were never delivered to anyone. Transaction markers
	// are delivered (and not counted) so that a partition whose last
	// offset below the end is a marker is seen to be done.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumePartitions(parts),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords()}, cfg.Opts...)...)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		fs.EachError(func(t string, p int32, err error) {
			cfg.Logger.Warn("audit: counting", "topic", t, "partition", p, "err", err)
		})
		var fatal error
		fs.EachRecord(func(r *kgo.Record) {
			e, ok := left[r.Topic][r.Partition]
			if !ok || r.Offset >= e {
				return // written after the scan began: the next scan counts it
			}
			if r.Offset+1 >= e {
				delete(left[r.Topic], r.Partition)
				remaining--
			}
			if fatal != nil || r.Attrs.IsControl() {
				return
			}
			if err := countRecord(ctx, hr, c, dc, r, cfg.Window); err != nil {
				fatal = err
			}
		})
		if fatal != nil {
			return nil, nil, fatal
		}
	}
	return c, topics, nil
}

// countRecord counts one record by its header, or apart.
func countRecord(ctx context.Context, hr *HeaderReader, c *Counts, dc *distinctCounter, r *kgo.Record, window time.Duration) error {
	t, server, err := hr.Read(ctx, r.Value)
	switch {
	case err == nil:
		k := Key{Topic: r.Topic, Window: WindowStart(t, window), Server: server}
		c.Events[k]++
		// A topic stamped with LogAppendTime says when each event
		// arrived in this cluster: its latency. CreateTime says only
		// when the producer sent it (kept by the mirror), so no figure.
		if r.Attrs.TimestampType() == 1 {
			c.addLatency(TopicWindow{Topic: r.Topic, Window: k.Window}, latencyBucket(r.Timestamp.Sub(t)), 1)
		}
		// The body without the envelope's schema id, which the mirror
		// may rewrite.
		dc.add(k, bytesID(r.Value[5:]))
	case errors.Is(err, ErrNoTime):
		c.NoTime[TopicWindow{Topic: r.Topic, Window: WindowStart(r.Timestamp, window)}]++
	case IsMalformed(err):
		c.Malformed[TopicWindow{Topic: r.Topic, Window: WindowStart(r.Timestamp, window)}]++
	default:
		return fmt.Errorf("audit: %s/%d offset %d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	return nil
}

// scanRange lists the topics to count with each partition's start and end.
func scanRange(ctx context.Context, cfg ScanConfig) (start, end map[string]map[int32]int64, topics []string, err error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.Opts...)...)
	if err != nil {
		return nil, nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics = cfg.Topics
	if len(topics) == 0 {
		td, err := adm.ListTopics(ctx)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("audit: list topics: %w", err)
		}
		for _, t := range td.Names() {
			if !strings.HasPrefix(t, "_") {
				topics = append(topics, t)
			}
		}
	}
	slices.Sort(topics)
	if len(topics) == 0 {
		return nil, nil, nil, nil
	}
	list := func(what string, f func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[string]map[int32]int64, error) {
		lo, err := f(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("audit: %s offsets: %w", what, err)
		}
		out := map[string]map[int32]int64{}
		var perr error
		lo.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				perr = fmt.Errorf("audit: %s offset of %s/%d: %w", what, o.Topic, o.Partition, o.Err)
				return
			}
			if out[o.Topic] == nil {
				out[o.Topic] = map[int32]int64{}
			}
			out[o.Topic][o.Partition] = o.Offset
		})
		return out, perr
	}
	if start, err = list("start", adm.ListStartOffsets); err != nil {
		return nil, nil, nil, err
	}
	if end, err = list("end", adm.ListCommittedOffsets); err != nil {
		return nil, nil, nil, err
	}
	return start, end, topics, nil
}

// PublishSnapshot publishes counts made by Scan as the full statement of
// source (a name for what was counted, e.g. "live-dc1") for the topics
// counted: one SNAPSHOT event per window in [from, to), empty windows
// included, so that a window whose records all disappeared reads zero.
// With from and to zero, every window holding a count is published.
// Each replaces, topic by topic and window by window, what an earlier
// snapshot of the same source said. Restrict from and to to windows that
// retention has not begun to delete, or the snapshot will state what is
// left of them.
func PublishSnapshot(ctx context.Context, cfg PublisherConfig, source string, c *Counts, topics []string, from, to time.Time) error {
	p, err := newPublisher(cfg)
	if err != nil {
		return err
	}
	p.snapshot, p.source, p.covers = true, source, slices.Clone(topics)
	c = c.Clone()
	ws := map[time.Time]bool{}
	for _, w := range c.Windows() {
		if (from.IsZero() || !w.Before(from)) && (to.IsZero() || w.Before(to)) {
			ws[w] = true
		}
	}
	if !from.IsZero() && !to.IsZero() {
		// Windows not yet begun are left for a later count to state.
		end := to
		if now := p.cfg.Now(); now.Before(end) {
			end = now
		}
		for w := WindowStart(from, p.cfg.Window); w.Before(end); w = w.Add(p.cfg.Window) {
			if !w.Before(from) {
				ws[w] = true
			}
		}
	}
	windows := make([]time.Time, 0, len(ws))
	for w := range ws {
		windows = append(windows, w)
	}
	slices.SortFunc(windows, time.Time.Compare)
	now := p.cfg.Now()
	p.mu.Lock()
	for _, w := range windows {
		counts, noTime, malformed := c.take(w)
		p.append(now, w, counts, noTime, malformed).Latency = c.takeLatency(w)
	}
	if len(p.outbox) == 0 {
		p.append(now, WindowStart(now, p.cfg.Window), nil, nil, nil)
	}
	p.outbox[len(p.outbox)-1].Final = true
	p.mu.Unlock()
	if err := p.sendMu.lock(ctx); err != nil {
		return err
	}
	defer p.sendMu.unlock()
	return p.sendOutbox(ctx)
}
