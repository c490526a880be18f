package main

import (
	"context"
	"fmt"
	"net/http"
)

// checkRoutes sends each kind of other request once through edge before the soak: a request
// edge sends to the wrong cell fails the run instead of soaking the wrong thing.
func (s *soak) checkRoutes(ctx context.Context, t soakTokens) error {
	job := clientJob{Edge: s.public, RunnerTok: t.runner, PATTok: t.pat, JobTok: t.job}
	for _, r := range otherRequests(job) {
		o := sendOther(ctx, s.http, s.public, r)
		switch {
		case o.err != nil:
			return fmt.Errorf("check %s %s: %w", r.method, r.path, o.err)
		case o.status != http.StatusOK || o.upstream != r.cell:
			return fmt.Errorf("check %s %s (%v): got %d from %q, want 200 from %s", r.method, r.path, headerNames(r.header), o.status, o.upstream, r.cell)
		}
	}
	return nil
}

func headerNames(h map[string]string) []string {
	var names []string
	for k := range h {
		names = append(names, k)
	}
	return names
}
