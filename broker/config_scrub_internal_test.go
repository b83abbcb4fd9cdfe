package broker

import "testing"

// Every partition of a broker scrubs through one pace, so --scrub-rate
// bounds the broker's scrubbing as a whole, however many partitions it has.
func TestEveryPartitionSharesOneScrubPace(t *testing.T) {
	c := Config{}.withDefaults()
	if c.Log.ScrubPace == nil {
		t.Fatal("the broker's log config has no shared scrub pace: each partition would scrub at the whole rate")
	}
	if again := c.withDefaults(); again.Log.ScrubPace != c.Log.ScrubPace {
		t.Error("applying the defaults again replaced the shared scrub pace")
	}
}
