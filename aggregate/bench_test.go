package aggregate

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// fillPods gives a fake member n pods about the size of real ones (labels, annotations).
func fillPods(f *fakeMember, n int) {
	for i := range n {
		f.add("ns", fmt.Sprintf("%s-pod-%04d", f.name, i))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, p := range f.pods {
		p.Labels = map[string]string{"app": "bench", "pod-template-hash": "5d4f8b9c7d", "tier": strings.Repeat("x", 40)}
		f.pods[k] = p
	}
}

func get(b *testing.B, url, token string) int {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
	return int(n)
}

// BenchmarkList: an aggregated list over 3 members x 1000 pods, against one member's own list of
// 1000 (goal: at most 1.5x the time). Run: go test -bench List -benchmem ./aggregate/
func BenchmarkList(b *testing.B) {
	t := &testing.T{}
	f := newFixture(t, nil, "c1", "c2", "c3")
	for _, m := range f.members {
		fillPods(m, 1000)
	}
	b.Run("one_member_1000", func(b *testing.B) {
		for b.Loop() {
			get(b, f.members["c1"].srv.URL+"/api/v1/pods", "edge-token-c1")
		}
	})
	b.Run("aggregated_3x1000", func(b *testing.B) {
		for b.Loop() {
			get(b, f.srv.URL+"/k8s/api/v1/pods", "alice-token")
		}
	})
	// The same with members that answer from a cache (their own CPU out of the picture): what
	// edge itself costs on top of one member's list.
	for _, m := range f.members {
		m.cacheList()
	}
	b.Run("one_member_1000_cached", func(b *testing.B) {
		for b.Loop() {
			get(b, f.members["c1"].srv.URL+"/api/v1/pods", "edge-token-c1")
		}
	})
	b.Run("aggregated_3x1000_cached", func(b *testing.B) {
		for b.Loop() {
			get(b, f.srv.URL+"/k8s/api/v1/pods", "alice-token")
		}
	})
}
