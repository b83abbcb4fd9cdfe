package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/schema"
)

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// Client publishes the monitoring events. Required. It should keep
	// its default acks=all: a monitoring event acknowledged only by the
	// leader's memory can be lost, which the reconciler would report.
	Client *kgo.Client
	// Registry is where the monitoring event schema is registered (on
	// first use, under "<Topic>-value"). Required.
	Registry schema.Registry
	// Tier names what this publisher counts. Default: TierProducer.
	Tier string
	// Topic receives the monitoring events. Default: DefaultTopic.
	Topic string
	// Window is the width of a counting window. Default: DefaultWindow.
	// Every publisher whose counts are compared should use the same width
	// (or one that divides the report's).
	Window time.Duration
	// FlushInterval is how often windows that have closed are published.
	// Default: one minute, or Window/2 if that is shorter.
	FlushInterval time.Duration
	// Host is header.server of the monitoring events. Default: the host
	// name.
	Host string
	// Logger receives a line per failed publish. Default: slog.Default().
	Logger *slog.Logger
	// Now is the clock that decides when a window has closed. Default:
	// time.Now.
	Now func() time.Time
	// WAL, when set, makes the publisher's counts survive a crash (see
	// WAL): it publishes under the WAL's name, resumes what an earlier
	// process left there, and closes the WAL on Close. Records are
	// counted through a Producer.
	WAL *WAL
}

// Publisher counts events per (topic, window, server) and publishes what it
// counted as monitoring events: for each window, after it has closed, and
// for everything still pending on Flush and Close. Counts that arrive for a
// window already published (late events) go out in a further event for that
// window; the reconciler adds them up. It is safe for concurrent use.
type Publisher struct {
	cfg      PublisherConfig
	id       string
	source   string
	snapshot bool
	fixedIDs bool // event ids derive from id and sequence (PublishOnce)
	covers   []string
	ser      *schema.Serializer
	log      *slog.Logger
	client   *kgo.Client // cfg.Client's settings under ClientID; see ownClient

	mu      sync.Mutex
	pending *Counts
	seq     int64
	prev    []Prior   // newest first, at most maxPrevious
	outbox  []*Event  // built, not yet acknowledged, in sequence order
	beat    time.Time // latest closed window announced
	closed  bool

	sendMu     sendLock    // one send at a time keeps events in sequence order
	topicReady atomic.Bool // the audit topic exists
	stop       chan struct{}
	// stopCtx is cancelled by Close when its own context is done, so
	// that a background publish stuck on brokers that never answer does
	// not hold Close up past its deadline.
	stopCtx    context.Context
	stopCancel context.CancelFunc
	done       chan struct{}

	// With a WAL: acknowledgements and drops not yet written, records
	// whose fate is unknown (since when), and how to look for them.
	wal       *WAL
	walAcks   []walAck
	walDrops  []uint64
	walDoubt  map[uint64]time.Time
	walFind   func(context.Context, []*walIntent) (map[uint64]bool, error)
	resolveMu sendLock

	// drop, set by tests, loses the events it returns true for as a
	// network would: they are never sent but count as acknowledged.
	drop func(*Event) bool
}

// NewPublisher returns a Publisher and starts publishing closed windows
// every FlushInterval. Close it to publish the rest.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	p, err := newPublisher(cfg)
	if err != nil {
		return nil, err
	}
	go p.loop()
	return p, nil
}

func newPublisher(cfg PublisherConfig) (*Publisher, error) {
	if cfg.Client == nil || cfg.Registry == nil {
		return nil, errors.New("audit: a publisher needs a Kafka client and a schema registry client")
	}
	if cfg.Tier == "" {
		cfg.Tier = TierProducer
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Window%time.Millisecond != 0 {
		return nil, fmt.Errorf("audit: window %v is not a whole number of milliseconds", cfg.Window)
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = min(time.Minute, cfg.Window/2)
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ser, err := schema.NewSerializer(cfg.Registry, schema.SerializerConfig{Schema: MonitoringSchema, Service: serviceName, Server: cfg.Host})
	if err != nil {
		return nil, fmt.Errorf("audit: monitoring schema: %w", err)
	}
	client, err := ownClient(cfg.Client)
	if err != nil {
		return nil, err
	}
	var r [4]byte
	rand.Read(r[:])
	id := fmt.Sprintf("%s/%d/%s", cfg.Host, os.Getpid(), hex.EncodeToString(r[:]))
	stopCtx, stopCancel := context.WithCancel(context.Background())
	p := &Publisher{
		stopCtx: stopCtx, stopCancel: stopCancel,
		cfg:       cfg,
		id:        id,
		source:    id,
		ser:       ser,
		client:    client,
		log:       cfg.Logger.With("audit_tier", cfg.Tier, "audit_publisher", id),
		pending:   NewCounts(),
		sendMu:    make(sendLock, 1),
		resolveMu: make(sendLock, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	if cfg.WAL != nil {
		p.adoptWAL(cfg.WAL)
	}
	return p, nil
}

// ID returns this publisher's name in monitoring events (host/pid/random).
func (p *Publisher) ID() string { return p.id }

// Tier returns the tier this publisher counts for.
func (p *Publisher) Tier() string { return p.cfg.Tier }

// Window returns the width of a counting window.
func (p *Publisher) Window() time.Duration { return p.cfg.Window }

// Count counts one event of topic whose header says it happened at
// eventTime on server.
func (p *Publisher) Count(topic string, eventTime time.Time, server string) {
	p.CountN(topic, eventTime, server, 1)
}

// CountN counts n events at once, e.g. one file of a load run.
// The latency of the events, now minus eventTime, goes into the window's
// histogram.
func (p *Publisher) CountN(topic string, eventTime time.Time, server string, n int64) {
	lat := latencyBucket(p.cfg.Now().Sub(eventTime))
	w := WindowStart(eventTime, p.cfg.Window)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wal != nil {
		p.walCount(kindEvent, topic, w, server, eventTime, n)
		return
	}
	p.pending.Events[Key{Topic: topic, Window: w, Server: server}] += n
	p.pending.addLatency(TopicWindow{Topic: topic, Window: w}, lat, n)
}

// NoTime counts an event of topic that has no usable header time, in the
// window of seen (when it was seen: the record's timestamp, or now).
func (p *Publisher) NoTime(topic string, seen time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wal != nil {
		p.walCount(kindNoTime, topic, WindowStart(seen, p.cfg.Window), "", seen, 1)
		return
	}
	p.pending.NoTime[TopicWindow{Topic: topic, Window: WindowStart(seen, p.cfg.Window)}]++
}

// Malformed counts an event of topic that failed to decode (or, for a
// producer, to encode), in the window of seen.
func (p *Publisher) Malformed(topic string, seen time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wal != nil {
		p.walCount(kindMalformed, topic, WindowStart(seen, p.cfg.Window), "", seen, 1)
		return
	}
	p.pending.Malformed[TopicWindow{Topic: topic, Window: WindowStart(seen, p.cfg.Window)}]++
}

// Flush publishes everything counted so far, closed windows or not, and
// waits for the acknowledgements, or until ctx is done.
func (p *Publisher) Flush(ctx context.Context) error {
	return p.publish(ctx, true, false)
}

// Close stops the background publishing and publishes everything still
// pending, the last event marked final, retrying until ctx is done. It
// returns by ctx's deadline whatever the brokers do (Unpublished then says
// what was not published). Counts made after Close are dropped.
func (p *Publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	// A background publish under way is let finish while ctx allows:
	// cancelling it at once could abandon a produce the brokers then
	// write, and the events would be delivered twice when sent again
	// below (counted once, but reported as a duplicate delivery).
	close(p.stop)
	select {
	case <-p.done:
	case <-ctx.Done():
		p.stopCancel()
		<-p.done
	}
	p.stopCancel()
	defer p.client.Close()
	if p.wal != nil {
		defer p.closeWAL()
		// Records still doubtful stay in the WAL for the next run: the
		// search gets half the time left, the final publish the rest.
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if d, ok := ctx.Deadline(); ok {
			rctx, cancel = context.WithTimeout(ctx, time.Until(d)/2)
		}
		p.resolve(rctx)
		cancel()
	}
	err := p.publish(ctx, true, true)
	for err != nil && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			// The final event is built; only sending is retried.
			if err = p.sendMu.lock(ctx); err == nil {
				err = p.sendOutbox(ctx)
				p.sendMu.unlock()
			}
		}
	}
	return err
}

// ClientID is the Kafka client id monitoring events are produced under:
// brokers admit writes to their internal _audit topic only from listed
// client ids (broker.DefaultInternalClients lists this one).
const ClientID = "tributary-audit"

// ownClient returns a client with the settings of cl (brokers, TLS, SASL,
// acks, ...) but ClientID, and without cl's consumer and group options,
// which would make it consume or join a group a second time. Connections
// are opened on first use.
func ownClient(cl *kgo.Client) (*kgo.Client, error) {
	var opts []kgo.Opt
	for _, o := range cl.Opts() {
		switch o.(type) {
		case kgo.ConsumerOpt, kgo.GroupOpt:
			continue
		}
		opts = append(opts, o)
	}
	own, err := kgo.NewClient(append(opts, kgo.ClientID(ClientID))...)
	if err != nil {
		return nil, fmt.Errorf("audit: client for publishing: %w", err)
	}
	return own, nil
}

func (p *Publisher) loop() {
	defer close(p.done)
	t := time.NewTicker(p.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			// Registering the schema and an acks=all produce may take
			// longer than a short interval; the next tick simply waits.
			ctx, cancel := context.WithTimeout(p.stopCtx, max(p.cfg.FlushInterval, 10*time.Second))
			if p.wal != nil {
				p.resolve(ctx)
			}
			if err := p.publish(ctx, false, false); err != nil {
				p.log.Warn("audit: monitoring events not published yet; retrying at the next flush", "err", err)
			}
			cancel()
		}
	}
}
