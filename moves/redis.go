package moves

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/redis/go-redis/v9"
	"gitlab.com/edge/edge/internal/redissub"
)

// Redis is the Store a fleet shares through the registry's Redis. Moves have no expiry: a move
// is forgotten only when GitLab says so (Delete).
//
//	<prefix>:v1:org_moves         hash: field <org id> = the move as JSON (Move.MarshalJSON)
//	<prefix>:v1:org_move_events   pub/sub channel: message <org id> after each change
type Redis struct {
	client redis.UniversalClient
	key    string
	events string
	log    *slog.Logger
}

// NewRedis keeps moves under prefix (the registry's key prefix) on client, which the caller
// closes.
func NewRedis(client redis.UniversalClient, prefix string, log *slog.Logger) *Redis {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Redis{client: client, key: prefix + ":v1:org_moves", events: prefix + ":v1:org_move_events", log: log}
}

// updateTries bounds how many times Update reads again after another edge changed the moves
// between its read and its write.
const updateTries = 16

func (s *Redis) Update(ctx context.Context, org uint64, next func(prev *Move) (Move, error)) (Move, error) {
	id := strconv.FormatUint(org, 10)
	var m Move
	var refused error // next's, not Redis's
	step := func(tx *redis.Tx) error {
		var prev *Move
		v, err := tx.HGet(ctx, s.key, id).Result()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return err
		default:
			prev = &Move{}
			if err := json.Unmarshal([]byte(v), prev); err != nil {
				s.log.Warn("an organization move in Redis is unreadable: replaced", "org_id", id, "error", err)
				prev = nil
			}
		}
		if m, refused = next(prev); refused != nil {
			return refused
		}
		if prev != nil && same(*prev, m) {
			return nil
		}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		// Announced in the same transaction: no edge misses a change that was written.
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, s.key, id, b)
			p.Publish(ctx, s.events, id)
			return nil
		})
		return err
	}
	for range updateTries {
		err := s.client.Watch(ctx, step, s.key)
		if errors.Is(err, redis.TxFailedErr) {
			continue // another edge changed a move meanwhile: read again
		}
		switch {
		case refused != nil:
			return Move{}, refused
		case err != nil:
			return Move{}, fmt.Errorf("moves: redis: %w", err)
		}
		return m, nil
	}
	return Move{}, fmt.Errorf("moves: redis: organization %d's move changed %d times while it was being updated", org, updateTries)
}

func (s *Redis) Delete(ctx context.Context, org uint64) error {
	id := strconv.FormatUint(org, 10)
	n, err := s.client.HDel(ctx, s.key, id).Result()
	if err != nil {
		return fmt.Errorf("moves: redis: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return s.publish(ctx, id)
}

// publish tells the other edges; one that misses it learns of the change at its next resync.
func (s *Redis) publish(ctx context.Context, org string) error {
	if err := s.client.Publish(ctx, s.events, org).Err(); err != nil {
		return fmt.Errorf("moves: redis: stored, but not announced: %w", err)
	}
	return nil
}

func (s *Redis) All(ctx context.Context) ([]Move, error) {
	fields, err := s.client.HGetAll(ctx, s.key).Result()
	if err != nil {
		return nil, fmt.Errorf("moves: redis: %w", err)
	}
	all := make([]Move, 0, len(fields))
	for org, v := range fields {
		var m Move
		if err := json.Unmarshal([]byte(v), &m); err != nil || strconv.FormatUint(m.Org, 10) != org {
			s.log.Warn("an organization move in Redis is unreadable: skipped", "org_id", org, "error", errors.Join(err))
			continue
		}
		all = append(all, m)
	}
	return all, nil
}

func (s *Redis) Watch(ctx context.Context, changed, synced func()) {
	redissub.Follow(ctx, s.client, s.events, 64, func(string) { changed() }, synced)
}
