package jobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule says when a job runs next.
type Schedule interface {
	// Next returns the first run time strictly after t.
	Next(t time.Time) time.Time
}

// every runs at multiples of an interval since the Unix epoch (every 15m:
// :00, :15, :30, :45), so that daemons started at different times agree.
type every time.Duration

func (e every) Next(t time.Time) time.Time {
	d := time.Duration(e)
	return t.Truncate(d).Add(d)
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule reads "every <duration>" or a five-field cron expression
// (minute hour day-of-month month day-of-week; descriptors such as @hourly
// and CRON_TZ= prefixes work too).
func ParseSchedule(s string) (Schedule, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, fmt.Errorf("%q: %q is not a duration (examples: every 15m, every 1h)", s, strings.TrimSpace(rest))
		}
		if d < time.Second {
			return nil, fmt.Errorf("%q: the interval must be at least 1s", s)
		}
		return every(d), nil
	}
	sched, err := cronParser.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q is neither \"every <duration>\" nor a cron expression: %v", s, err)
	}
	return sched, nil
}
