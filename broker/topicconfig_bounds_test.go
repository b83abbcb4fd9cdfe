package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testenv"
)

// Values that parse but take the broker down (a segment per batch, every
// segment deleted as it is sealed, batches no request can carry, an
// acks=all no ISR can satisfy, NaN) are refused with INVALID_CONFIG naming
// the bound, on CreateTopics, on AlterConfigs and as broker defaults; the
// bounds themselves are accepted.
func TestTopicConfigsOutsideSafeRangesAreRefused(t *testing.T) {
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr)
	ctx := context.Background()
	createTopic(t, b.Addr, "bounded", 1, nil)
	for _, tc := range []struct{ key, value, want string }{
		{"segment.ms", "1", "at least 60000"},
		{"segment.ms", "59999", "at least 60000"},
		{"retention.ms", "0", "at least 1000 or -1"},
		{"retention.bytes", "0", "at least 1024 or -1"},
		{"max.message.bytes", "2147483647", "--max-request-bytes"},
		{"min.insync.replicas", "1000", "replication factor 1"},
		{"min.insync.replicas", "2", "replication factor 1"},
		{"min.cleanable.dirty.ratio", "NaN", "between 0 and 1"},
	} {
		resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{tc.key: kmsg.StringPtr(tc.value)}, "refused")
		if err == nil {
			err = resp.Err
		}
		if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(resp.ErrMessage, tc.want) {
			t.Errorf("CreateTopics %s=%s: %v %q, want INVALID_CONFIG saying %q", tc.key, tc.value, err, resp.ErrMessage, tc.want)
		}
		err = alterTopic(t, adm, "bounded", set(tc.key, tc.value))
		if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AlterConfigs %s=%s: %v, want INVALID_CONFIG saying %q", tc.key, tc.value, err, tc.want)
		}
	}
	for key, v := range map[string]string{"log.roll.ms": "1", "log.retention.ms": "0", "log.retention.minutes": "0",
		"log.retention.bytes": "0", "message.max.bytes": "2147483647"} {
		err := alterBroker(t, adm, []kadm.AlterConfig{set(key, v)})
		if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), "must be at") {
			t.Errorf("broker default %s=%s: %v, want INVALID_CONFIG naming the bound", key, v, err)
		}
	}
	for key, v := range map[string]string{"segment.ms": "60000", "retention.ms": "1000", "retention.bytes": "1024",
		"max.message.bytes": "104857600", "min.insync.replicas": "1", "min.cleanable.dirty.ratio": "0"} {
		if err := alterTopic(t, adm, "bounded", set(key, v)); err != nil {
			t.Errorf("the bound %s=%s itself: %v", key, v, err)
		}
	}
}
