package workspaceauth

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/internal/guard"
)

type panickingAuthorizer struct{}

func (panickingAuthorizer) Authorize(context.Context, User, string, int) (Decision, error) {
	panic("test: the authorizer crashed")
}

// An authorizer that panics is contained: singleflight runs it on a goroutine of its own and
// re-panics there, where nothing could recover it, so a panic ended the process. Now the call
// is unavailable (the request is refused, fail closed), the panic counted, and the cache answers
// the next call.
func TestCacheContainsAnAuthorizerPanic(t *testing.T) {
	g, err := guard.New(slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache(panickingAuthorizer{}, 0, 0, nil).UseGuard(g)
	for i := range 2 {
		_, err := c.Authorize(context.Background(), User{ID: "1", Username: "alice"}, "ws", 8080)
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, guard.ErrCrashed) {
			t.Errorf("call %d: %v, want ErrUnavailable from a contained crash", i, err)
		}
	}
	if n := g.Contained("workspace_authz"); n != 2 {
		t.Errorf("edge_panics_total{where=workspace_authz} = %v, want 2", n)
	}
}
