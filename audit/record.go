package audit

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// RecordCounter counts Kafka records for a Publisher by their event
// header: the way a tier that moves records (the mirror) counts what it
// has safely written. It reads the header without decoding the rest of the
// value, from a writer schema fetched once per schema id. It is safe for
// concurrent use.
type RecordCounter struct {
	pub     *Publisher
	headers *HeaderReader
	skip    func(topic string) bool

	mu     sync.Mutex
	warned time.Time
}

// NewRecordCounter returns a RecordCounter counting in pub, resolving
// schema ids through pub's registry (which must be the registry of the
// ids in the records it is given). Records of topics whose names start
// with "_" (_audit, _schemas) are not counted: they are not events.
func NewRecordCounter(pub *Publisher) (*RecordCounter, error) {
	hr, err := NewHeaderReader(pub.cfg.Registry, false)
	if err != nil {
		return nil, err
	}
	return &RecordCounter{pub: pub, headers: hr, skip: internalTopic}, nil
}

func internalTopic(t string) bool { return len(t) > 0 && t[0] == '_' }

// Count counts r by its header time and server; a record without a usable
// time, or that is not an envelope of a known schema, is counted apart by
// its timestamp. When the registry cannot be reached the record is counted
// malformed too (its window cannot be known) and a warning logged, at most
// once a minute.
func (c *RecordCounter) Count(ctx context.Context, r *kgo.Record) {
	if c.skip(r.Topic) {
		return
	}
	t, server, err := c.headers.Read(ctx, r.Value)
	switch {
	case err == nil:
		c.pub.Count(r.Topic, t, server)
	case errors.Is(err, ErrNoTime):
		c.pub.NoTime(r.Topic, r.Timestamp)
	default:
		if !IsMalformed(err) {
			c.warn(err)
		}
		c.pub.Malformed(r.Topic, r.Timestamp)
	}
}

// Copied is Count for the mirror (mirror.Config.Auditor): it is called
// for every record the target acknowledged.
func (c *RecordCounter) Copied(source string, r *kgo.Record) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.Count(ctx, r)
}

func (c *RecordCounter) warn(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.warned) < time.Minute {
		return
	}
	c.warned = time.Now()
	slog.Warn("audit: cannot read event headers, counting records as malformed", "tier", c.pub.cfg.Tier, "err", err)
}
