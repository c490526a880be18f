package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

func (c *cluster) getOK(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// connections asks edge i's API for GitLab where agent j is connected: the holders' internal URLs.
func (c *cluster) connections(ctx context.Context, i, j int) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	url := fmt.Sprintf("http://%s/-/api/v1/agents/%s/connections", c.edges[i].public, c.agents[j].id)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.apiToken)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var doc struct {
		Connections []struct {
			Edge string `json:"edge"`
		} `json:"connections"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var holders []string
	for _, conn := range doc.Connections {
		holders = append(holders, conn.Edge)
	}
	return holders, nil
}

// agentHeldBy tells whether edge i lists agent j connected at edge home.
func (c *cluster) agentHeldBy(ctx context.Context, j, home int) bool {
	holders, err := c.connections(ctx, home, j)
	if err != nil {
		return false
	}
	for _, h := range holders {
		if h == "http://"+c.edges[home].internal {
			return true
		}
	}
	return false
}

// edgeSeesAll tells whether edge i reports every cell up and lists every agent at its home edge
// (through the registry for the agents held elsewhere); what it lacks, when not.
func (c *cluster) edgeSeesAll(ctx context.Context, i int) (bool, string) {
	m, err := scrape(ctx, c.http, "http://"+c.edges[i].ops+"/metrics")
	if err != nil {
		return false, err.Error()
	}
	for _, cs := range c.cells {
		if m[fmt.Sprintf(`edge_cell_up{cell="%d"}`, cs.id)] != 1 {
			return false, fmt.Sprintf("cell %d not up", cs.id)
		}
	}
	for j, as := range c.agents {
		holders, err := c.connections(ctx, i, j)
		if err != nil {
			return false, fmt.Sprintf("agent %s: %v", as.id, err)
		}
		if !contains(holders, "http://"+c.edges[as.home].internal) {
			return false, fmt.Sprintf("agent %s not listed at edge%d (holders %v)", as.id, as.home+1, holders)
		}
	}
	return true, ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c *cluster) waitEdgeSeesAll(ctx context.Context, i int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, why := c.edgeSeesAll(ctx, i)
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("edge%d: not every cell up and agent listed after %s: %s", i+1, timeout, why)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
