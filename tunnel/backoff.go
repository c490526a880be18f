package tunnel

import (
	"errors"
	"math/rand/v2"
	"time"
)

// backoff is jittered exponential: each wait is drawn from [d/2, d), d doubling from min to max.
// A refused token waits the longest at once: retrying it fast changes nothing.
type backoff struct {
	min, max time.Duration
	next     time.Duration
}

func (b *backoff) reset() { b.next = b.min }

func (b *backoff) wait(err error) time.Duration {
	if b.next < b.min {
		b.next = b.min
	}
	d := b.next
	if errors.Is(err, ErrUnauthorized) {
		d = b.max
	}
	b.next = min(d*2, b.max)
	return d/2 + rand.N(d/2+1)
}
