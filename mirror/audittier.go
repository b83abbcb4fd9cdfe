package mirror

import (
	"context"
	"errors"
	"log/slog"
	"strings"
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
// Internal topics (a leading '_': _audit, _schemas) are copied but not
// counted: their records are not application events, and counting the
// copied monitoring events would report them as excess.
type AuditTier struct {
	pub     *audit.Publisher
	headers *audit.HeaderReader
	log     *slog.Logger
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

// Copied counts r.
func (a *AuditTier) Copied(source string, r *kgo.Record) {
	if strings.HasPrefix(r.Topic, "_") {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), headerWait)
	defer cancel()
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		t, server, err := a.headers.Read(ctx, r.Value)
		switch {
		case err == nil:
			a.pub.Count(r.Topic, t, server)
			return
		case errors.Is(err, audit.ErrNoTime):
			a.pub.NoTime(r.Topic, r.Timestamp)
			return
		case audit.IsMalformed(err):
			a.pub.Malformed(r.Topic, r.Timestamp)
			return
		}
		select {
		case <-ctx.Done():
			a.log.Error("a copied record is not counted for the audit: its schema could not be read from the registry; the audit will report it missing",
				"source", source, "topic", r.Topic, "target_partition", r.Partition, "target_offset", r.Offset, "err", err)
			return
		case <-time.After(backoff):
		}
	}
}
