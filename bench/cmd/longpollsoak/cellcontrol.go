package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// cellStats asks the cell what it holds and has seen.
func (s *soak) cellStats(ctx context.Context) (cellStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.cellCo+"/stats", nil)
	if err != nil {
		return cellStats{}, fmt.Errorf("cell stats: %w", err)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return cellStats{}, fmt.Errorf("cell stats: %w", err)
	}
	defer resp.Body.Close()
	var cs cellStats
	if err := json.NewDecoder(resp.Body).Decode(&cs); err != nil {
		return cellStats{}, fmt.Errorf("cell stats: %w", err)
	}
	return cs, nil
}

func (s *soak) release(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.cellCo+"/release", nil)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("release: %s", resp.Status)
	}
	return nil
}
