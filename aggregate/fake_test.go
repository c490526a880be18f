package aggregate

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeMember follows the apiserver's wire protocol for pods, enough for the proxy: lists (JSON
// and Table, limit/continue, 400 on a bad continue), get, update with resourceVersion checks,
// watch from a resourceVersion (410 once compacted past it), and a streaming log.
type fakeMember struct {
	name      string
	srv       *httptest.Server
	mu        sync.Mutex
	rv        int
	compacted int
	pods      map[string]fakePod // by namespace/name
	events    []fakeEvent        // every change, for watches
	changed   chan struct{}
	kick      chan struct{} // closed to end every open watch
	cached    []byte        // a plain list's answer, when set: the benchmark's members
	seen      []*http.Request
}

type fakePod struct {
	Namespace, Name string
	RV              int
	Labels          map[string]string
}

type fakeEvent struct {
	typ string
	pod fakePod
}

func newFakeMember(t *testing.T, name string) *fakeMember {
	f := &fakeMember{name: name, pods: map[string]fakePod{}, changed: make(chan struct{}), kick: make(chan struct{}), rv: 100}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMember) member() Member {
	return Member{Name: f.name, Server: f.srv.URL, Token: "edge-token-" + f.name}
}

func (f *fakeMember) add(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	p := fakePod{Namespace: ns, Name: name, RV: f.rv}
	f.pods[ns+"/"+name] = p
	f.events = append(f.events, fakeEvent{"ADDED", p})
	close(f.changed)
	f.changed = make(chan struct{})
}

// bookmark moves the version on without a change and tells watches that asked for bookmarks.
func (f *fakeMember) bookmark() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	f.events = append(f.events, fakeEvent{"BOOKMARK", fakePod{RV: f.rv}})
	close(f.changed)
	f.changed = make(chan struct{})
	return f.rv
}

// endWatches ends every open watch, as an apiserver restart or a timeout would.
func (f *fakeMember) endWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.kick)
	f.kick = make(chan struct{})
}

func (f *fakeMember) compact() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compacted = f.rv
}

func (p fakePod) object() map[string]any {
	return map[string]any{"kind": "Pod", "apiVersion": "v1", "metadata": map[string]any{
		"name": p.Name, "namespace": p.Namespace, "resourceVersion": strconv.Itoa(p.RV), "labels": p.Labels},
		"status": map[string]any{"phase": "Pending"}}
}

func (f *fakeMember) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.seen...)
}

func status(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(statusObject(code, reason, reason))
}

func (f *fakeMember) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r)
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer edge-token-"+f.name {
		status(w, 401, "Unauthorized")
		return
	}
	if r.Header.Get("Impersonate-User") == "mallory" {
		status(w, 403, "Forbidden")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/version":
		json.NewEncoder(w).Encode(map[string]string{"gitVersion": "v1.32.13", "member": f.name})
	case len(parts) == 3 && parts[2] == "pods":
		if r.URL.Query().Get("watch") == "1" || r.URL.Query().Get("watch") == "true" {
			f.watch(w, r)
		} else {
			f.list(w, r, "")
		}
	case len(parts) == 5 && parts[4] == "pods":
		f.list(w, r, parts[3])
	case len(parts) >= 6 && parts[4] == "pods":
		f.object(w, r, parts[3], parts[5], strings.Join(parts[6:], "/"))
	default:
		status(w, 404, "NotFound")
	}
}

func (f *fakeMember) sortedPods(ns string) []fakePod {
	var out []fakePod
	for _, p := range f.pods {
		if ns == "" || p.Namespace == ns {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+out[i].Name < out[j].Namespace+out[j].Name })
	return out
}

// cacheList makes the member answer plain lists from one rendering.
func (f *fakeMember) cacheList() {
	rec := httptest.NewRecorder()
	f.list(rec, httptest.NewRequest("GET", "/api/v1/pods", nil), "")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cached = rec.Body.Bytes()
}

func (f *fakeMember) list(w http.ResponseWriter, r *http.Request, ns string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cached != nil && r.URL.RawQuery == "" && !strings.Contains(r.Header.Get("Accept"), "as=Table") {
		w.Header().Set("Content-Type", "application/json")
		w.Write(f.cached)
		return
	}
	q := r.URL.Query()
	pods := f.sortedPods(ns)
	start := 0
	if c := q.Get("continue"); c != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "at-"))
		if err != nil || !strings.HasPrefix(c, "at-") {
			status(w, 400, "BadRequest")
			return
		}
		start = n
	}
	end := len(pods)
	cont := ""
	if l, _ := strconv.Atoi(q.Get("limit")); l > 0 && start+l < len(pods) {
		end, cont = start+l, "at-"+strconv.Itoa(start+l)
	}
	page := pods[min(start, len(pods)):end]
	meta := map[string]any{"resourceVersion": strconv.Itoa(f.rv)}
	if cont != "" {
		meta["continue"] = cont
	}
	w.Header().Set("Content-Type", "application/json")
	if strings.Contains(r.Header.Get("Accept"), "as=Table") {
		rows := []any{}
		for _, p := range page {
			rows = append(rows, map[string]any{"cells": []any{p.Name, "Pending"}, "object": p.object()})
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
			"columnDefinitions": []any{map[string]any{"name": "Name"}, map[string]any{"name": "Status"}}, "rows": rows})
		return
	}
	items := []any{}
	for _, p := range page {
		items = append(items, p.object())
	}
	json.NewEncoder(w).Encode(map[string]any{"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items})
}

func (f *fakeMember) object(w http.ResponseWriter, r *http.Request, ns, name, sub string) {
	f.mu.Lock()
	p, ok := f.pods[ns+"/"+name]
	f.mu.Unlock()
	if !ok {
		status(w, 404, "NotFound")
		return
	}
	switch {
	case sub == "log":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "log of %s from %s\n", name, f.name)
	case r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(p.object())
	case r.Method == http.MethodPut:
		var body struct {
			Metadata struct {
				ResourceVersion string            `json:"resourceVersion"`
				Labels          map[string]string `json:"labels"`
				Annotations     map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		if _, leaked := body.Metadata.Annotations[ClusterAnnotation]; leaked {
			status(w, 422, "Invalid")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if body.Metadata.ResourceVersion != strconv.Itoa(p.RV) {
			status(w, 409, "Conflict")
			return
		}
		f.rv++
		p.RV, p.Labels = f.rv, body.Metadata.Labels
		f.pods[ns+"/"+name] = p
		f.events = append(f.events, fakeEvent{"MODIFIED", p})
		close(f.changed)
		f.changed = make(chan struct{})
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(p.object())
	default:
		status(w, 405, "MethodNotAllowed")
	}
}

func (f *fakeMember) watch(w http.ResponseWriter, r *http.Request) {
	from, _ := strconv.Atoi(r.URL.Query().Get("resourceVersion"))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	flush := func() { http.NewResponseController(w).Flush() }
	flush()
	f.mu.Lock()
	if from != 0 && from < f.compacted {
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"type": "ERROR", "object": statusObject(410, "Expired", "too old resource version")})
		return
	}
	kick := f.kick
	f.mu.Unlock()
	bookmarks := r.URL.Query().Get("allowWatchBookmarks") == "true"
	sent := 0
	for {
		f.mu.Lock()
		evs, changed := f.events, f.changed
		f.mu.Unlock()
		for ; sent < len(evs); sent++ {
			ev := evs[sent]
			if ev.pod.RV <= from || (ev.typ == "BOOKMARK" && !bookmarks) {
				continue
			}
			obj := ev.pod.object()
			if ev.typ == "BOOKMARK" {
				obj = map[string]any{"kind": "Pod", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": strconv.Itoa(ev.pod.RV)}}
			}
			json.NewEncoder(w).Encode(map[string]any{"type": ev.typ, "object": obj})
			flush()
		}
		select {
		case <-changed:
		case <-kick:
			return
		case <-r.Context().Done():
			return
		}
	}
}
