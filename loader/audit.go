package loader

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/loader/warehouse"
	"github.com/tributary-io/tributary/schema"
)

// AuditConfig makes a run count what it committed as the audit's
// "warehouse" tier (audit.TierWarehouse): events per topic, window of
// header time and header server, as monitoring events on the audit topic.
//
// The counts are part of the run's manifest, so they are committed with
// the data and the offsets they describe: a run that fails or is killed
// before its commit counts nothing (the next run loads and counts the same
// records once), and a committed run's counts are never lost. They are
// published after the commit under the publisher "loader-run/<run>" with
// event ids derived from that name (audit.PublishOnce), then marked
// published in _tributary/audit/<run>. A run killed in between leaves them
// unmarked, and the next run with an AuditConfig publishes them again: the
// events it sends the second time are ones the reconciler already holds,
// so the counts are in the audit exactly once.
type AuditConfig struct {
	// Brokers of the cluster holding the audit topic. Default: the
	// run's brokers.
	Brokers []string
	// RegistryURL is the registry the monitoring event schema is
	// registered in; or Registry, a client. Default: the run's registry.
	RegistryURL string
	Registry    schema.Registry
	// Topic receives the monitoring events. Default: audit.DefaultTopic.
	Topic string
	// Window is the width of a counting window. Default:
	// audit.DefaultWindow.
	Window time.Duration
	// Timeout bounds the publish after the commit. Default: the run's
	// BrokerTimeout.
	Timeout time.Duration
}

// auditKey is what one count is about, within a partition's topic.
type auditKey struct {
	window int64 // start of the window of header time, epoch ms
	server string
}

// auditCounts is what one partition's writer counted for the audit: events
// in data files by header time window and server, and apart from them those
// without a header time or that went to _errors, by the window of their
// record timestamp.
type auditCounts struct {
	events    map[auditKey]int64
	noTime    map[int64]int64
	malformed map[int64]int64
	latency   map[int64][]int64 // window → histogram (audit.LatencyBucket)
}

func newAuditCounts() *auditCounts {
	return &auditCounts{events: map[auditKey]int64{}, noTime: map[int64]int64{}, malformed: map[int64]int64{}, latency: map[int64][]int64{}}
}

// addLatency counts one event of window w read d after its header time.
func (c *auditCounts) addLatency(w int64, d time.Duration) {
	i := audit.LatencyBucket(d)
	b := c.latency[w]
	for len(b) <= i {
		b = append(b, 0)
	}
	b[i]++
	c.latency[w] = b
}

// ManifestAudit is what a run counted for the audit's warehouse tier,
// committed in its manifest.
type ManifestAudit struct {
	// WindowMS is the width of the counting windows.
	WindowMS  int64        `json:"window_ms"`
	Events    []AuditCount `json:"events,omitempty"`
	NoTime    []AuditCount `json:"no_time,omitempty"`
	Malformed []AuditCount `json:"malformed,omitempty"`
	// Latency holds per topic and window how long after their header
	// time the run read the events (audit.LatencyBucket buckets).
	Latency []AuditLatency `json:"latency,omitempty"`
}

// AuditLatency is a latency histogram of a topic's events in a window.
type AuditLatency struct {
	Topic   string  `json:"topic"`
	Window  int64   `json:"window"`
	Buckets []int64 `json:"buckets"`
}

// AuditCount is a number of events of a topic in a window (and, for
// Events, of a header server).
type AuditCount struct {
	Topic  string `json:"topic"`
	Window int64  `json:"window"` // start, epoch ms
	Server string `json:"server,omitempty"`
	N      int64  `json:"n"`
}

// auditRecord gathers what the run's writers counted, or returns nil when
// the run does not count or counted nothing (there is nothing to publish).
func (r *run) auditRecord(plans []*partPlan) *ManifestAudit {
	if r.cfg.Audit == nil {
		return nil
	}
	a := &ManifestAudit{WindowMS: r.cfg.Audit.Window.Milliseconds()}
	for _, pl := range plans {
		c := pl.writer.audit
		if c == nil {
			continue
		}
		for k, n := range c.events {
			a.Events = append(a.Events, AuditCount{Topic: pl.topic, Window: k.window, Server: k.server, N: n})
		}
		for w, n := range c.noTime {
			a.NoTime = append(a.NoTime, AuditCount{Topic: pl.topic, Window: w, N: n})
		}
		for w, n := range c.malformed {
			a.Malformed = append(a.Malformed, AuditCount{Topic: pl.topic, Window: w, N: n})
		}
		for w, b := range c.latency {
			a.Latency = append(a.Latency, AuditLatency{Topic: pl.topic, Window: w, Buckets: b})
		}
	}
	sort.Slice(a.Latency, func(i, j int) bool {
		if a.Latency[i].Topic != a.Latency[j].Topic {
			return a.Latency[i].Topic < a.Latency[j].Topic
		}
		return a.Latency[i].Window < a.Latency[j].Window
	})
	if len(a.Events)+len(a.NoTime)+len(a.Malformed) == 0 {
		return nil
	}
	for _, l := range [][]AuditCount{a.Events, a.NoTime, a.Malformed} {
		sort.Slice(l, func(i, j int) bool {
			if l[i].Topic != l[j].Topic {
				return l[i].Topic < l[j].Topic
			}
			if l[i].Window != l[j].Window {
				return l[i].Window < l[j].Window
			}
			return l[i].Server < l[j].Server
		})
	}
	return a
}

// check refuses counts the loader cannot have written.
func (a *ManifestAudit) check() error {
	if a.WindowMS <= 0 {
		return fmt.Errorf("audit window_ms %d is not positive", a.WindowMS)
	}
	for _, l := range [][]AuditCount{a.Events, a.NoTime, a.Malformed} {
		for _, c := range l {
			if c.N < 0 || c.Window%a.WindowMS != 0 {
				return fmt.Errorf("audit count %+v: not a count of a %d ms window", c, a.WindowMS)
			}
		}
	}
	for _, l := range a.Latency {
		if l.Window%a.WindowMS != 0 || len(l.Buckets) > audit.LatencyBuckets || slices.ContainsFunc(l.Buckets, func(n int64) bool { return n < 0 }) {
			return fmt.Errorf("audit latency of %s at %d: not a histogram of a %d ms window", l.Topic, l.Window, a.WindowMS)
		}
	}
	return nil
}

// counts returns the record as the audit's Counts.
func (a *ManifestAudit) counts() *audit.Counts {
	c := audit.NewCounts()
	for _, e := range a.Events {
		c.Events[audit.Key{Topic: e.Topic, Window: time.UnixMilli(e.Window).UTC(), Server: e.Server}] += e.N
	}
	for _, e := range a.NoTime {
		c.NoTime[audit.TopicWindow{Topic: e.Topic, Window: time.UnixMilli(e.Window).UTC()}] += e.N
	}
	for _, e := range a.Malformed {
		c.Malformed[audit.TopicWindow{Topic: e.Topic, Window: time.UnixMilli(e.Window).UTC()}] += e.N
	}
	if len(a.Latency) > 0 {
		c.Latency = map[audit.TopicWindow][]int64{}
		for _, l := range a.Latency { // one per partition: added up
			k := audit.TopicWindow{Topic: l.Topic, Window: time.UnixMilli(l.Window).UTC()}
			b := c.Latency[k]
			for len(b) < len(l.Buckets) {
				b = append(b, 0)
			}
			for i, n := range l.Buckets {
				b[i] += n
			}
			c.Latency[k] = b
		}
	}
	return c
}

// auditDir holds a marker per committed run whose counts were published.
const auditDir = stateDir + "/audit"

func auditMarker(run string) string { return path.Join(auditDir, run) }

// AuditPublisherName is the publisher of a committed run's counts.
func AuditPublisherName(run string) string { return "loader-run/" + run }

// publishAudit publishes the counts of every committed run that has not
// had them published (the run's own, and those of runs killed before they
// published), oldest first, and marks each published. The runs are
// committed whatever happens here: a failure is returned for the summary
// and the log, and the next run with an AuditConfig tries again.
func (r *run) publishAudit(ctx context.Context) error {
	ac := r.cfg.Audit
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ac.Timeout)
	defer cancel()
	pending, err := r.unpublished()
	if err != nil || len(pending) == 0 {
		return err
	}
	reg, err := r.auditRegistry()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ac.Brokers...), kgo.RequestTimeoutOverhead(ac.Timeout)}, r.cfg.kgoOpts...)...)
	if err != nil {
		return fmt.Errorf("audit brokers %v: %w", ac.Brokers, err)
	}
	defer cl.Close()
	for _, m := range pending {
		if m.Run == r.id {
			if err := r.hook(FaultBeforeAudit); err != nil {
				return err
			}
		}
		c := m.Audit.counts()
		pcfg := audit.PublisherConfig{
			Client: cl, Registry: reg, Tier: audit.TierWarehouse, Topic: ac.Topic,
			Window: time.Duration(m.Audit.WindowMS) * time.Millisecond, Logger: r.log,
		}
		if err := audit.PublishOnce(ctx, pcfg, AuditPublisherName(m.Run), m.Committed, c); err != nil {
			return fmt.Errorf("publishing the warehouse tier's counts of run %s to %v: %w", m.Run, ac.Brokers, err)
		}
		if m.Run == r.id {
			if err := r.hook(FaultAfterAudit); err != nil {
				return err
			}
		}
		if err := warehouse.WriteFile(r.w, auditMarker(m.Run), []byte(m.Committed.UTC().Format(time.RFC3339Nano)+"\n")); err != nil {
			return fmt.Errorf("run %s: its counts are published, but marking them so failed (they will be published again, which is harmless): %w", m.Run, err)
		}
		events, noTime, malformed := c.Total()
		if m.Run != r.id {
			r.log.Info("audit counts of an earlier committed run published", "tier", audit.TierWarehouse, "of_run", m.Run, "events", events, "no_time_or_malformed", noTime+malformed)
		} else {
			r.log.Info("audit counts published", "tier", audit.TierWarehouse, "events", events, "no_time_or_malformed", noTime+malformed)
		}
		r.sum.AuditPublished = append(r.sum.AuditPublished, m.Run)
	}
	return nil
}

// auditRegistry returns the registry of the monitoring event schema.
func (r *run) auditRegistry() (schema.Registry, error) {
	ac := r.cfg.Audit
	if ac.Registry != nil {
		return ac.Registry, nil
	}
	reg, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(ac.RegistryURL), sr.HTTPClient(&http.Client{Timeout: ac.Timeout})}, r.cfg.srOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("audit registry %s: %w", ac.RegistryURL, err)
	}
	return reg, nil
}

// unpublished returns the committed manifests whose counts are not marked
// published, in commit order.
func (r *run) unpublished() ([]*Manifest, error) {
	commits, err := listCommits(r.w)
	if err != nil {
		return nil, err
	}
	infos, err := r.w.ReadDir(auditDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("listing %s in %s: %w", auditDir, r.w, err)
	}
	published := make(map[string]bool, len(infos))
	for _, fi := range infos {
		published[fi.Name()] = true
	}
	var out []*Manifest
	for _, c := range commits {
		if c.run != "" && published[c.run] && !r.republish {
			continue
		}
		// A commit named by its number alone is read to learn its run.
		m, err := readManifest(r.w, c.name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned meanwhile
		}
		if err != nil {
			return nil, err
		}
		if published[m.Run] && !r.republish {
			continue
		}
		if m.Audit != nil {
			out = append(out, m)
		} else {
			// A run that counted nothing: marked so that later runs
			// need not read its manifest again. Best effort.
			warehouse.WriteFile(r.w, auditMarker(m.Run), []byte("no audit counts\n"))
		}
	}
	return out, nil
}

// PublishAudit publishes, without loading anything, the warehouse tier's
// counts of every committed run in the warehouse that has not had them
// published (`tributary audit republish`): for when the loader is not
// running and its counts are wanted now. With again, it publishes those
// already marked published too, which restores what the audit topic lost
// (to retention, say) and is a no-op for the rest. Only runs whose
// manifests are still in the warehouse can be published: superseded ones
// are pruned once their counts are published. c needs a warehouse, brokers
// and a registry; its topics and audit settings are optional. It returns
// the runs whose counts it published.
func PublishAudit(ctx context.Context, c Config, again bool) ([]string, error) {
	if c.Audit == nil {
		c.Audit = &AuditConfig{}
	}
	if len(c.Topics) == 0 && c.TopicRegex == "" {
		c.TopicRegex = ".*" // every run's counts, whatever it loaded
	}
	cfg, err := c.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("publishing audit counts: %w", err)
	}
	r := newRun(cfg)
	r.republish = again
	r.w = cfg.FS
	if r.w == nil {
		if r.w, err = warehouse.Open(cfg.Warehouse); err != nil {
			return nil, err
		}
		defer r.w.Close()
	}
	err = r.publishAudit(ctx)
	return r.sum.AuditPublished, err
}
