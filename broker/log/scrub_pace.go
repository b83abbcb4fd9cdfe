package log

import (
	"sync"
	"time"
)

// ScrubPace paces the scrubbers of every log that shares it to one rate,
// so that scrubbing costs a broker the same with ten partitions as with
// ten thousand: all its scrubbers together read at most rate bytes a
// second, however many are due at once. The broker shares one; a log
// given none paces alone.
type ScrubPace struct {
	rate float64 // bytes a second
	mu   sync.Mutex
	next time.Time // when the reads reserved so far are paid for
}

// NewScrubPace returns a pace of rate bytes a second (DefaultScrubRate if
// rate is not positive).
func NewScrubPace(rate int64) *ScrubPace {
	if rate <= 0 {
		rate = DefaultScrubRate
	}
	return &ScrubPace{rate: float64(rate)}
}

// wait takes n bytes' turn on the shared timeline and sleeps until it has
// come, or returns errScrubStopped once done is closed. Turns are taken in
// order, so scrubbers due at once read one after another at the rate
// rather than each at it.
func (p *ScrubPace) wait(n int, done <-chan struct{}) error {
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	p.next = p.next.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	d := p.next.Sub(now)
	p.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return errScrubStopped
	case <-t.C:
		return nil
	}
}
