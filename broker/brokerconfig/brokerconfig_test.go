package brokerconfig

import (
	"strings"
	"testing"
	"time"
)

// TestApplyLevel: at one level the finest key of a setting decides, a key
// that does not change at run time is refused naming it, and an unset
// max.connections.per.ip follows max.connections.
func TestApplyLevel(t *testing.T) {
	s, errs := ApplyLevel(Builtin(), map[string]string{
		"log.retention.hours": "5", "log.retention.ms": "60000", "max.connections": "200",
	})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := s.Topic.Log.RetentionAge; got != time.Minute {
		t.Errorf("retention %v, want log.retention.ms's minute over log.retention.hours", got)
	}
	if d, ok := Of("max.connections.per.ip"); !ok || d.Get(s) != "20" {
		t.Errorf("max.connections.per.ip reads %q, want a tenth of max.connections", d.Get(s))
	}
	if err := Check(map[string]string{"num.io.threads": "8"}); err == nil || !strings.Contains(err.Error(), "num.io.threads cannot change at run time") {
		t.Errorf("a static key: %v", err)
	}
	if err := Check(map[string]string{"max.connections": "0"}); err == nil || !strings.Contains(err.Error(), "max.connections") {
		t.Errorf("max.connections=0: %v", err)
	}
}
