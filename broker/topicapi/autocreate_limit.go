package topicapi

// Auto-creation has a rate and a cap of its own. Before, an anonymous
// client naming 100k random topics created 9,995 of them in 89 s, slowed
// every other client, and left --max-topics full, so that every
// administrator's CreateTopics was refused afterwards. Now an unknown topic
// is created on first use at most AutoCreateRate times a second across the
// broker (with ten seconds' worth of burst), beyond which the client gets
// THROTTLING_QUOTA_EXCEEDED (retriable: a real client tries again shortly),
// and only while the cluster has fewer than AutoCreateMaxTopics topics (by
// default half of --max-topics), so CreateTopics always keeps room.
// Refusals are logged at most once every ten seconds, with a count.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// autoCreateLimit is the token bucket of auto-creations.
type autoCreateLimit struct {
	mu      sync.Mutex
	rate    float64 // tokens a second; <= 0: unlimited
	burst   float64
	tokens  float64
	last    time.Time
	refused atomic.Int64
	logged  atomic.Int64 // unix nanos of the last refusal log line
}

func newAutoCreateLimit(rate float64) *autoCreateLimit {
	burst := max(10*rate, 1)
	return &autoCreateLimit{rate: rate, burst: burst, tokens: burst, last: time.Now()}
}

// take reports whether one more auto-creation may go now.
func (a *autoCreateLimit) take() bool {
	if a.rate <= 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	a.tokens = min(a.burst, a.tokens+now.Sub(a.last).Seconds()*a.rate)
	a.last = now
	if a.tokens < 1 {
		return false
	}
	a.tokens--
	return true
}

// autoCreateRefusal is the error code refusing the auto-creation of name,
// or 0 when it may go ahead.
func (h *Handlers) autoCreateRefusal(name string) int16 {
	if max := h.limits.AutoCreateMaxTopics; max > 0 && len(h.meta.Topics()) >= max {
		h.logAutoCreateRefusal(name, "the cluster has reached the topics auto-creation may make: create topics explicitly, or raise --auto-create-max-topics", max)
		return kerr.PolicyViolation.Code
	}
	if !h.autoCreate.take() {
		h.logAutoCreateRefusal(name, "topics are auto-created faster than --auto-create-rate allows", 0)
		return kerr.ThrottlingQuotaExceeded.Code
	}
	return 0
}

// refusalLogEvery bounds how often refused auto-creations are logged: a
// client asking in a loop must not turn the limit into a log flood.
const refusalLogEvery = 10 * time.Second

func (h *Handlers) logAutoCreateRefusal(name, why string, maxTopics int) {
	a := h.autoCreate
	n := a.refused.Add(1)
	now := time.Now().UnixNano()
	last := a.logged.Load()
	if now-last < int64(refusalLogEvery) || !a.logged.CompareAndSwap(last, now) {
		return
	}
	h.logger.Warn("topic auto-creation refused", "topic", name, "reason", why, "refused_total", n,
		"auto_create_rate", h.limits.AutoCreateRate, "auto_create_max_topics", h.limits.AutoCreateMaxTopics, "max_topics", maxTopics)
}
