package audit

import "time"

// DefaultWindow is the width of a counting window: long enough that one
// monitoring event per producer per window is cheap, short enough that a
// loss is located to a few minutes of data.
const DefaultWindow = 10 * time.Minute

// WindowStart returns the start of the window of width size that holds t.
// Windows are aligned to the Unix epoch in UTC, so every producer and every
// tier, whatever its time zone, cuts time at the same instants.
func WindowStart(t time.Time, size time.Duration) time.Time {
	if size <= 0 {
		size = DefaultWindow
	}
	ms := t.UnixMilli()
	w := size.Milliseconds()
	start := ms - ms%w
	if ms < 0 && ms%w != 0 {
		start -= w // floor, not truncation toward zero
	}
	return time.UnixMilli(start).UTC()
}
