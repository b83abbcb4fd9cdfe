package loader

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/audit"
	"github.com/tributary-io/tributary/schema"
)

// AuditConfig makes a run count what it committed as the audit's
// "warehouse" tier (audit.TierWarehouse): events per topic, window of
// header time and header server, as monitoring events on the audit topic.
//
// Counts are published only after the run's manifest is committed, so a
// run that fails or is killed before its commit counts nothing, and the
// next run, which loads the same records again, counts them once. A run
// killed between its commit and the publish leaves its records uncounted;
// `tributary audit count --tier warehouse --warehouse URL` states what the
// warehouse holds as a snapshot, which covers that case (and any other
// difference between the running counts and the files).
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
}

func newAuditCounts() *auditCounts {
	return &auditCounts{events: map[auditKey]int64{}, noTime: map[int64]int64{}, malformed: map[int64]int64{}}
}

// publishAudit publishes what the committed run wrote, through a publisher
// of its own that it closes (which publishes everything, the last event
// marked final). The run is committed whatever happens here: a failure is
// returned for the summary and the log, not as the run's.
func (r *run) publishAudit(ctx context.Context, plans []*partPlan) error {
	ac := r.cfg.Audit
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ac.Timeout)
	defer cancel()
	reg := ac.Registry
	if reg == nil {
		var err error
		if reg, err = sr.NewClient(append([]sr.ClientOpt{sr.URLs(ac.RegistryURL), sr.HTTPClient(&http.Client{Timeout: ac.Timeout})}, r.cfg.srOpts...)...); err != nil {
			return fmt.Errorf("audit registry %s: %w", ac.RegistryURL, err)
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ac.Brokers...), kgo.RequestTimeoutOverhead(ac.Timeout)}, r.cfg.kgoOpts...)...)
	if err != nil {
		return fmt.Errorf("audit brokers %v: %w", ac.Brokers, err)
	}
	defer cl.Close()
	pub, err := audit.NewPublisher(audit.PublisherConfig{
		Client: cl, Registry: reg, Tier: audit.TierWarehouse, Topic: ac.Topic,
		Window: ac.Window, Logger: r.log,
	})
	if err != nil {
		return err
	}
	var events, apart int64
	for _, pl := range plans {
		c := pl.writer.audit
		if c == nil {
			continue
		}
		for k, n := range c.events {
			pub.CountN(pl.topic, time.UnixMilli(k.window), k.server, n)
			events += n
		}
		// The publisher has no NoTimeN or MalformedN; these are rare.
		for w, n := range c.noTime {
			for range n {
				pub.NoTime(pl.topic, time.UnixMilli(w))
			}
			apart += n
		}
		for w, n := range c.malformed {
			for range n {
				pub.Malformed(pl.topic, time.UnixMilli(w))
			}
			apart += n
		}
	}
	if err := pub.Close(ctx); err != nil {
		return fmt.Errorf("publishing the warehouse tier's counts to %v: %w", ac.Brokers, err)
	}
	r.log.Info("audit counts published", "tier", audit.TierWarehouse, "events", events, "no_time_or_malformed", apart)
	return nil
}
