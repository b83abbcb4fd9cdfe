package broker

// Features Tributary refuses (share groups) are refused with
// an error the client shows and a broker log line that says what is not
// supported, so that an operator learns why an application fails without
// asking its owners. A client retrying in a loop must not flood the log:
// each feature is logged at most once a minute, with the number of
// refusals the line stands for.

import (
	"sync"
	"time"
)

// refusalLogInterval is the least time between two lines of one feature.
const refusalLogInterval = time.Minute

// refusalLog counts refusals per feature between log lines.
type refusalLog struct {
	mu sync.Mutex
	by map[string]*refusalCount
}

type refusalCount struct {
	logged time.Time // when the last line went out
	n      int64     // refusals since then, not yet in a line
}

// refuse records one refusal of feature and logs it, with how many there
// were since the feature's last line, when the last line is a minute old
// (or there was none). attrs describe this refusal (client, principal).
func (b *Broker) refuse(feature, why string, attrs ...any) {
	r := &b.refusals
	r.mu.Lock()
	if r.by == nil {
		r.by = map[string]*refusalCount{}
	}
	c := r.by[feature]
	if c == nil {
		c = &refusalCount{}
		r.by[feature] = c
	}
	c.n++
	now := time.Now()
	if !c.logged.IsZero() && now.Sub(c.logged) < refusalLogInterval {
		r.mu.Unlock()
		return
	}
	n := c.n
	c.logged, c.n = now, 0
	r.mu.Unlock()
	b.logger.Warn("refused a request for a feature Tributary does not support: "+why,
		append([]any{"feature", feature, "refusals", n, "per", refusalLogInterval}, attrs...)...)
}
