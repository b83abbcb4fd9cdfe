package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/audit"
)

// AuditTier is the Auditor that makes the analysis cluster a tier of the
// audit: every record the target acknowledged is counted in an
// audit.Publisher by its event header's time and server, exactly as the
// producers counted it, and the publisher sends the per-window counts to
// the _audit topic. Create the publisher with Tier audit.TierMirror.
//
// With a publisher that has a WAL (audit.PublisherConfig.WAL), each copy's
// count is written to the WAL before the copy is produced and counted
// once acknowledged; copies whose acknowledgement a killed mirror never
// wrote are found in the target by the next mirror started with the same
// WAL (and the publisher told the target, audit.Publisher.FindIn), so the
// mirror tier counts exactly the copies the target holds, across kills.
// Without one, counts not yet published when the process dies are lost.
//
// Internal topics (a leading '_': _audit, _schemas) are copied but not
// counted: their records are not application events, and counting the
// copied monitoring events would report them as excess.
type AuditTier struct {
	pub     *audit.Publisher
	headers *audit.HeaderReader
	log     *slog.Logger
	tickets sync.Map // *kgo.Record → its intent in the WAL
}

// NewAuditTier counts into pub, reading headers with headers (which must
// resolve the ids as written in the target: the target registry).
func NewAuditTier(pub *audit.Publisher, headers *audit.HeaderReader, log *slog.Logger) *AuditTier {
	if log == nil {
		log = slog.Default()
	}
	return &AuditTier{pub: pub, headers: headers, log: log}
}

// headerWait bounds the retries of a header whose schema the registry
// cannot give right now. The reader caches what it learned per schema id,
// so only the first record of each schema can wait.
const headerWait = 30 * time.Second

// readHeader reads r's header time and server, retrying while the
// registry cannot be reached, until ctx ends. herr is ErrNoTime or a
// malformed value's error; err that the registry never answered.
func (a *AuditTier) readHeader(ctx context.Context, r *kgo.Record) (t time.Time, server string, herr, err error) {
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		t, server, err := a.headers.Read(ctx, r.Value)
		if err == nil || errors.Is(err, audit.ErrNoTime) || audit.IsMalformed(err) {
			return t, server, err, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, "", nil, err
		case <-time.After(backoff):
		}
	}
}

// Sending writes the count of a copy to the WAL before it is produced
// (a tier without a WAL counts in Copied instead).
func (a *AuditTier) Sending(ctx context.Context, source string, r *kgo.Record) error {
	if !a.pub.Logged() || strings.HasPrefix(r.Topic, "_") {
		return nil
	}
	t, server, herr, err := a.readHeader(ctx, r)
	if err != nil {
		return err // ctx ended: the copy is not made either
	}
	seq, err := a.pub.Intend(r, t, server, herr)
	if err != nil {
		return &fatalError{fmt.Errorf("source %s: %s: the audit WAL cannot take the copy's count, so it is not copied: %w", source, r.Topic, err)}
	}
	a.tickets.Store(r, seq)
	return nil
}

// Failed makes the count of a copy the target did not acknowledge
// doubtful: it is counted if the target holds the copy after all.
func (a *AuditTier) Failed(source string, r *kgo.Record) {
	if seq, ok := a.tickets.LoadAndDelete(r); ok {
		a.pub.Sent(seq.(uint64), errors.New("not acknowledged"))
	}
}

// Copied counts r.
func (a *AuditTier) Copied(source string, r *kgo.Record) {
	if strings.HasPrefix(r.Topic, "_") {
		return
	}
	if a.pub.Logged() {
		if seq, ok := a.tickets.LoadAndDelete(r); ok {
			a.pub.Sent(seq.(uint64), nil)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), headerWait)
	defer cancel()
	t, server, herr, err := a.readHeader(ctx, r)
	switch {
	case err != nil:
		a.log.Error("a copied record is not counted for the audit: its schema could not be read from the registry; the audit will report it missing",
			"source", source, "topic", r.Topic, "target_partition", r.Partition, "target_offset", r.Offset, "err", err)
	case herr == nil:
		a.pub.Count(r.Topic, t, server)
	case errors.Is(herr, audit.ErrNoTime):
		a.pub.NoTime(r.Topic, r.Timestamp)
	default:
		a.pub.Malformed(r.Topic, r.Timestamp)
	}
}
