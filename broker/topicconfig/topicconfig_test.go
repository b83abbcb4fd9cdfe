package topicconfig

import (
	"strings"
	"testing"
	"time"
)

// TestApplyNamesTheOffendingKey: an unknown name or a value Tributary cannot
// honour fails naming its key, the first in name order; a segment.ms stored
// below the floor reads as the floor; a good set changes what it names.
func TestApplyNamesTheOffendingKey(t *testing.T) {
	for _, c := range []struct {
		configs map[string]string
		want    string
	}{
		{map[string]string{"retention.mss": "1"}, `unknown topic config "retention.mss"`},
		{map[string]string{"max.message.bytes": "0"}, "max.message.bytes=0"},
		{map[string]string{"zz.unknown": "1", "cleanup.policy": "shred"}, "cleanup.policy=shred"},
		{map[string]string{"unclean.leader.election.enable": "maybe"}, "unclean.leader.election.enable"},
		{map[string]string{"follower.replication.throttled.replicas": "0-1"}, "not partition:broker"},
	} {
		if err := Check(c.configs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %q", c.configs, err, c.want)
		}
	}
	s, err := Apply(Builtin(), map[string]string{"segment.ms": "1", "min.insync.replicas": "2", "message.timestamp.type": "LogAppendTime"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Log.SegmentAge != MinSegmentMs*time.Millisecond || s.MinISR != 2 || !s.LogAppendTime {
		t.Errorf("applied: segment age %v, min ISR %d, log append time %v", s.Log.SegmentAge, s.MinISR, s.LogAppendTime)
	}
	if got := Get(s, "segment.ms"); got != "60000" {
		t.Errorf("segment.ms reads %q, want the floor 60000", got)
	}
}
