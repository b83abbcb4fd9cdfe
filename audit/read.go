package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/schema"
)

// Source is where monitoring events are read from.
type Source struct {
	// Brokers of the cluster holding the audit topic. Required.
	Brokers []string
	// Registry resolves the monitoring events' schema ids. Required.
	Registry schema.Registry
	// Topic holds the monitoring events. Default: DefaultTopic.
	Topic string
	// Opts are extra client options (TLS, SASL, ...).
	Opts []kgo.Opt
	// Logger receives a line per monitoring event that does not decode.
	// Default: slog.Default().
	Logger *slog.Logger
}

// ErrNoAuditTopic means the audit topic does not exist yet: no publisher
// has published a monitoring event to this cluster.
var ErrNoAuditTopic = errors.New("audit: the audit topic does not exist (no monitoring event was ever published to these brokers)")

// Load adds to st every monitoring event published since `since` (zero:
// from the beginning), up to the end of the topic as it was when Load
// began. It returns how many events it read.
//
// A monitoring event is published after its window closes, or later for
// late events, so since should lie well before the first window wanted.
func Load(ctx context.Context, src Source, since time.Time, st *Store) (int, error) {
	return follow(ctx, src, since, st, true, nil)
}

// Follow is Load that goes on adding new events until ctx is done.
// caughtUp, if not nil, is called once when the events that existed at the
// start have been added. It waits for the topic to be created.
func Follow(ctx context.Context, src Source, since time.Time, st *Store, caughtUp func()) error {
	_, err := follow(ctx, src, since, st, false, caughtUp)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func follow(ctx context.Context, src Source, since time.Time, st *Store, stopAtEnd bool, caughtUp func()) (int, error) {
	if src.Topic == "" {
		src.Topic = DefaultTopic
	}
	if src.Logger == nil {
		src.Logger = slog.Default()
	}
	// Events are decoded in their writer schema, not resolved to ours: a
	// stray record of another schema in the topic is then skipped as "not
	// a monitoring event" instead of failing the whole read, and a later
	// version that only adds fields still converts.
	des, err := schema.NewDeserializer(src.Registry, schema.DeserializerConfig{})
	if err != nil {
		return 0, err
	}
	var start, end map[int32]int64
	for {
		start, end, err = offsets(ctx, src, since)
		if err == nil || stopAtEnd || !errors.Is(err, ErrNoAuditTopic) {
			break
		}
		select { // serve waits for the first publisher
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	if err != nil {
		return 0, err
	}
	parts := map[int32]kgo.Offset{}
	remaining := map[int32]bool{}
	for p, off := range start {
		parts[p] = kgo.NewOffset().At(off)
		if off < end[p] {
			remaining[p] = true
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(src.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{src.Topic: parts})}, src.Opts...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	n := 0
	for {
		if len(remaining) == 0 {
			if caughtUp != nil {
				caughtUp()
				caughtUp = nil
			}
			if stopAtEnd {
				return n, nil
			}
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		fs.EachError(func(t string, p int32, err error) {
			src.Logger.Warn("audit: reading monitoring events", "topic", t, "partition", p, "err", err)
		})
		var fatal error
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= end[r.Partition] {
				delete(remaining, r.Partition)
			}
			e, err := decodeEvent(ctx, des, r.Value)
			if err == nil {
				st.Add(e)
				n++
				return
			}
			if !errors.Is(err, context.Canceled) && !IsMalformed(err) && fatal == nil && !errors.Is(err, errNotEvent) {
				fatal = err
			}
			src.Logger.Warn("audit: skipping a record of the audit topic that is not a monitoring event",
				"partition", r.Partition, "offset", r.Offset, "err", err)
		})
		if fatal != nil {
			return n, fmt.Errorf("audit: reading %s: %w", src.Topic, fatal)
		}
	}
}

// errNotEvent marks a record that decoded but is not a monitoring event.
var errNotEvent = errors.New("not a monitoring event")

// decodeEvent decodes one record of the audit topic. Anyone who can write
// to the topic can put any bytes there, so this is a decoder of untrusted
// input: it returns an error (malformed, or errNotEvent), never panics,
// and allocates in proportion to the record, whatever lengths it claims
// (FuzzDecodeEvent).
func decodeEvent(ctx context.Context, des *schema.Deserializer, value []byte) (*Event, error) {
	v, err := des.Deserialize(ctx, value)
	if err != nil {
		return nil, err
	}
	e, err := eventFromNative(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotEvent, err)
	}
	return e, nil
}

// offsets returns where to start reading each partition of the audit
// topic and where it ends now.
func offsets(ctx context.Context, src Source, since time.Time) (start, end map[int32]int64, err error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(src.Brokers...)}, src.Opts...)...)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, src.Topic)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: end offsets of %s: %w", src.Topic, err)
	}
	var starts kadm.ListedOffsets
	if since.IsZero() {
		starts, err = adm.ListStartOffsets(ctx, src.Topic)
	} else {
		starts, err = adm.ListOffsetsAfterMilli(ctx, since.UnixMilli(), src.Topic)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("audit: start offsets of %s: %w", src.Topic, err)
	}
	start, end = map[int32]int64{}, map[int32]int64{}
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		switch {
		case errors.Is(o.Err, kerr.UnknownTopicOrPartition):
			lerr = fmt.Errorf("%w: %s", ErrNoAuditTopic, src.Topic)
		case o.Err != nil:
			lerr = fmt.Errorf("audit: end offset of %s/%d: %w", src.Topic, o.Partition, o.Err)
		default:
			end[o.Partition] = o.Offset
		}
	})
	starts.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset >= 0 {
			start[o.Partition] = o.Offset
		}
	})
	if lerr != nil {
		return nil, nil, lerr
	}
	if len(end) == 0 {
		return nil, nil, fmt.Errorf("%w: %s", ErrNoAuditTopic, src.Topic)
	}
	for p, e := range end {
		if _, ok := start[p]; !ok {
			start[p] = e // nothing after since
		}
	}
	return start, end, nil
}
