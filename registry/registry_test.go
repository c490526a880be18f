package registry_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"gitlab.com/edge/edge/registry"
	"gitlab.com/edge/edge/registry/registrytest"
)

func TestRegistryImplementations(t *testing.T) {
	var _ registry.Registry = (*registry.Memory)(nil)
	var _ registry.Registry = (*registry.Redis)(nil)
}

// The JSON names are the API for GitLab's and the Redis layout's.
func TestConnInfoJSONNames(t *testing.T) {
	c := registrytest.Conn("agent-1", "proj-1", "conn-1")
	c.Edge = registrytest.EdgeA
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	want := []string{"agent_id", "commit", "connected_at", "connection_id", "edge", "pod_name", "pod_namespace", "project_id", "version"}
	if !slices.Equal(got, want) {
		t.Errorf("fields: got %v, want %v", got, want)
	}
	if got, want := m["connected_at"], "2025-01-02T03:04:05Z"; got != want {
		t.Errorf("connected_at: got %v, want %v (RFC 3339)", got, want)
	}
	c.ProjectID = ""
	b, _ = json.Marshal(c)
	m = nil
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if _, ok := m["project_id"]; ok {
		t.Errorf("project_id present when empty: %s", b)
	}
}

func TestRegistryOptionsValidation(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	good := registry.Options{Self: registrytest.EdgeA}
	tests := []struct {
		name   string
		opts   func(*registry.Options)
		client redis.UniversalClient
		ok     bool
	}{
		{"defaults", func(*registry.Options) {}, client, true},
		{"refresh equal to ttl", func(o *registry.Options) { o.TTL, o.Refresh = time.Minute, time.Minute }, client, false},
		{"refresh above default ttl", func(o *registry.Options) { o.Refresh = 10 * time.Minute }, client, false},
		{"negative ttl", func(o *registry.Options) { o.TTL = -time.Second }, client, false},
		{"poll min above max", func(o *registry.Options) { o.PollMin, o.PollMax = time.Minute, time.Second }, client, false},
		{"no self", func(o *registry.Options) { o.Self = "" }, client, false},
		{"self not a URL", func(o *registry.Options) { o.Self = "edge-a" }, client, false},
		{"no client", func(*registry.Options) {}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.opts(&o)
			_, err := registry.NewRedis(tt.client, registry.RedisOptions{Options: o}, nil)
			if got := err == nil; got != tt.ok {
				t.Errorf("NewRedis: got error %v, want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, registry.ErrBadOptions) {
				t.Errorf("error %v does not wrap ErrBadOptions", err)
			}
		})
	}
}
