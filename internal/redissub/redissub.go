// Package redissub follows a Redis pub/sub channel for the stores that announce their changes
// on one (the agent registry, the organization moves).
package redissub

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Follow subscribes to channel and calls onMessage with each message's payload, and subscribed
// each time the subscription begins or begins again (go-redis resubscribes after Redis comes
// back: what was announced meanwhile was missed). It returns when ctx ends or the channel
// closes; buffer is how many messages may wait for onMessage.
func Follow(ctx context.Context, client redis.UniversalClient, channel string, buffer int, onMessage func(payload string), subscribed func()) {
	ps := client.Subscribe(ctx, channel)
	defer ps.Close()
	ch := ps.ChannelWithSubscriptions(redis.WithChannelSize(buffer))
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			switch m := m.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" {
					subscribed()
				}
			case *redis.Message:
				onMessage(m.Payload)
			}
		}
	}
}
