package aggregate

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type fixture struct {
	members map[string]*fakeMember
	proxy   *Proxy
	srv     *httptest.Server
}

func newFixture(t *testing.T, configure func(*Options), names ...string) *fixture {
	t.Helper()
	f := &fixture{members: map[string]*fakeMember{}}
	auth, err := NewAuthenticator([]byte("alice-token,alice,1,\"dev,ops\"\nmallory-token,mallory,2\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Prefix: "/k8s", Authenticate: auth.Authenticate}
	for _, n := range names {
		m := newFakeMember(t, n)
		f.members[n] = m
		o.Members = append(o.Members, m.member())
	}
	if configure != nil {
		configure(&o)
	}
	if f.proxy, err = New(o, nil); err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.proxy)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) do(t *testing.T, method, path string, body io.Reader, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer alice-token")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

type podList struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		Continue        string `json:"continue"`
	} `json:"metadata"`
	Items []struct {
		Metadata struct {
			Name            string            `json:"name"`
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
	} `json:"items"`
	Columns []map[string]any `json:"columnDefinitions"`
	Rows    []map[string]any `json:"rows"`
}

func TestListMergesMembers(t *testing.T) {
	f := newFixture(t, nil, "c1", "c2")
	f.members["c1"].add("ns", "a")
	f.members["c2"].add("ns", "b")
	f.members["c2"].add("other", "c")
	resp, body := f.do(t, "GET", "/k8s/api/v1/pods?labelSelector=x%3Dy", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var l podList
	json.Unmarshal(body, &l)
	if len(l.Items) != 3 {
		t.Fatalf("items: %d, want 3: %s", len(l.Items), body)
	}
	want := map[string]string{"a": "c1", "b": "c2", "c": "c2"}
	for _, it := range l.Items {
		if it.Metadata.Annotations[ClusterAnnotation] != want[it.Metadata.Name] {
			t.Errorf("%s: cluster %q, want %q", it.Metadata.Name, it.Metadata.Annotations[ClusterAnnotation], want[it.Metadata.Name])
		}
		g, _, err := decodeRV(it.Metadata.ResourceVersion)
		if err != nil || len(g) != 1 || g[want[it.Metadata.Name]] == "" {
			t.Errorf("%s: resourceVersion %q does not name its owner", it.Metadata.Name, it.Metadata.ResourceVersion)
		}
	}
	g, _, err := decodeRV(l.Metadata.ResourceVersion)
	if err != nil || g["c1"] != "101" || g["c2"] != "102" {
		t.Errorf("list resourceVersion %v %v, want c1 101, c2 102", g, err)
	}
	for name, m := range f.members {
		r := m.requests()[0]
		if r.URL.Query().Get("labelSelector") != "x=y" || r.Header.Get("Impersonate-User") != "alice" ||
			strings.Join(r.Header.Values("Impersonate-Group"), ",") != "dev,ops" {
			t.Errorf("%s got %v %v", name, r.URL.Query(), r.Header)
		}
	}
}

func TestTableMerge(t *testing.T) {
	f := newFixture(t, nil, "c1", "c2")
	f.members["c1"].add("ns", "a")
	f.members["c2"].add("ns", "b")
	_, body := f.do(t, "GET", "/k8s/api/v1/pods", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	var l podList
	json.Unmarshal(body, &l)
	if len(l.Rows) != 2 || len(l.Columns) != 2 {
		t.Errorf("Table: %d rows, %d columns, want 2 and 2: %s", len(l.Rows), len(l.Columns), body)
	}
}

func TestPagingAcrossMembers(t *testing.T) {
	f := newFixture(t, nil, "c2", "c1") // config order is not page order: names sort
	f.members["c1"].add("ns", "a1")
	f.members["c1"].add("ns", "a2")
	f.members["c2"].add("ns", "b1")
	var names []string
	next := "/k8s/api/v1/pods?limit=1"
	for range 10 {
		resp, body := f.do(t, "GET", next, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		var l podList
		json.Unmarshal(body, &l)
		for _, it := range l.Items {
			names = append(names, it.Metadata.Name)
		}
		if l.Metadata.Continue == "" {
			break
		}
		next = "/k8s/api/v1/pods?limit=1&continue=" + l.Metadata.Continue
	}
	if strings.Join(names, ",") != "a1,a2,b1" {
		t.Errorf("pages: %v, want a1,a2,b1", names)
	}
	if resp, _ := f.do(t, "GET", "/k8s/api/v1/pods?limit=1&continue=garbage!", nil); resp.StatusCode != 400 {
		t.Errorf("bad continue: %d, want 400", resp.StatusCode)
	}
	gone := continueToken{RV: "", Cluster: "c9"}.encode()
	if resp, _ := f.do(t, "GET", "/k8s/api/v1/pods?limit=1&continue="+gone, nil); resp.StatusCode != 410 {
		t.Errorf("continue naming a removed member: %d, want 410", resp.StatusCode)
	}
	member400 := continueToken{Cluster: "c1", Continue: "junk"}.encode()
	if resp, _ := f.do(t, "GET", "/k8s/api/v1/pods?limit=1&continue="+member400, nil); resp.StatusCode != 400 {
		t.Errorf("a member's 400 on its continue: %d, want 400", resp.StatusCode)
	}
}

func TestGetUpdateAndOwners(t *testing.T) {
	f := newFixture(t, nil, "c1", "c2")
	f.members["c1"].add("ns", "a")
	f.members["c2"].add("ns", "b")
	f.members["c1"].add("ns", "dup")
	f.members["c2"].add("ns", "dup")
	if resp, _ := f.do(t, "GET", "/k8s/api/v1/namespaces/ns/pods/zzz", nil); resp.StatusCode != 404 {
		t.Errorf("missing: %d, want 404", resp.StatusCode)
	}
	if resp, _ := f.do(t, "GET", "/k8s/api/v1/namespaces/ns/pods/dup", nil); resp.StatusCode != 409 {
		t.Errorf("in two members: %d, want 409", resp.StatusCode)
	}
	resp, body := f.do(t, "GET", "/k8s/api/v1/namespaces/ns/pods/b", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("get: %d %s", resp.StatusCode, body)
	}
	// Replace it as kubectl replace would: the body carries the global version and the annotation.
	var obj map[string]any
	json.Unmarshal(body, &obj)
	obj["metadata"].(map[string]any)["labels"] = map[string]any{"x": "y"}
	put, _ := json.Marshal(obj)
	resp, body = f.do(t, "PUT", "/k8s/api/v1/namespaces/ns/pods/b", strings.NewReader(string(put)), "Content-Type", "application/json")
	if resp.StatusCode != 200 {
		t.Fatalf("update: %d %s", resp.StatusCode, body)
	}
	var updated podList
	json.Unmarshal([]byte(`{"items":[`+string(body)+`]}`), &updated)
	if g, _, _ := decodeRV(updated.Items[0].Metadata.ResourceVersion); g["c2"] == "" {
		t.Errorf("update answer's resourceVersion %q does not name c2", updated.Items[0].Metadata.ResourceVersion)
	}
	// The same body again is stale now: the owner says 409.
	if resp, _ := f.do(t, "PUT", "/k8s/api/v1/namespaces/ns/pods/b", strings.NewReader(string(put)), "Content-Type", "application/json"); resp.StatusCode != 409 {
		t.Errorf("stale update: %d, want 409", resp.StatusCode)
	}
	if resp, body := f.do(t, "GET", "/k8s/api/v1/namespaces/ns/pods/a/log", nil); resp.StatusCode != 200 || string(body) != "log of a from c1\n" {
		t.Errorf("log: %d %q, want c1's", resp.StatusCode, body)
	}
	if resp, _ := f.do(t, "POST", "/k8s/api/v1/namespaces/ns/pods", strings.NewReader("{}"), "Content-Type", "application/json"); resp.StatusCode != 405 {
		t.Errorf("create without placement: %d, want 405", resp.StatusCode)
	}
}

func TestMemberDownAndForbidden(t *testing.T) {
	for _, partial := range []bool{false, true} {
		f := newFixture(t, func(o *Options) { o.Partial = partial }, "c1", "c2")
		f.members["c1"].add("ns", "a")
		f.members["c2"].srv.Close()
		resp, body := f.do(t, "GET", "/k8s/api/v1/pods", nil)
		switch {
		case !partial && (resp.StatusCode != 503 || !strings.Contains(string(body), "c2")):
			t.Errorf("fail policy: %d %s, want 503 naming c2", resp.StatusCode, body)
		case partial && (resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Warning"), "c2")):
			t.Errorf("partial policy: %d Warning %q, want 200 with a Warning naming c2", resp.StatusCode, resp.Header.Get("Warning"))
		}
	}
	f := newFixture(t, nil, "c1", "c2")
	req, _ := http.NewRequest("GET", f.srv.URL+"/k8s/api/v1/pods", nil)
	req.Header.Set("Authorization", "Bearer mallory-token")
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("a member forbids: %d, want 403", resp.StatusCode)
	}
	req.Header.Set("Authorization", "Bearer wrong")
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("unknown token: %d, want 401", resp.StatusCode)
	}
}

func TestWatchMergeAndResume(t *testing.T) {
	f := newFixture(t, nil, "c1", "c2")
	f.members["c1"].add("ns", "a")
	_, body := f.do(t, "GET", "/k8s/api/v1/pods", nil)
	var l podList
	json.Unmarshal(body, &l)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func(rv string) (*bufio.Scanner, func()) {
		req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/k8s/api/v1/pods?watch=1&resourceVersion="+rv, nil)
		req.Header.Set("Authorization", "Bearer alice-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return bufio.NewScanner(resp.Body), func() { resp.Body.Close() }
	}
	sc, closeWatch := open(l.Metadata.ResourceVersion)
	f.members["c2"].add("ns", "b")
	f.members["c1"].add("ns", "c")
	seen := map[string]string{}
	var last string
	for len(seen) < 2 && sc.Scan() {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct {
					Name            string            `json:"name"`
					ResourceVersion string            `json:"resourceVersion"`
					Annotations     map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"object"`
		}
		json.Unmarshal(sc.Bytes(), &ev)
		seen[ev.Object.Metadata.Name] = ev.Object.Metadata.Annotations[ClusterAnnotation]
		if ev.Object.Metadata.Name == "b" {
			last = ev.Object.Metadata.ResourceVersion
		}
	}
	closeWatch()
	if seen["b"] != "c2" || seen["c"] != "c1" || seen["a"] != "" {
		t.Fatalf("events from the list's version: %v, want b from c2 and c from c1 only", seen)
	}
	// Resumed from b's event: c (if it came after b) and nothing before b again.
	g, _, err := decodeRV(last)
	if err != nil || g["c2"] == "" || g["c1"] == "" {
		t.Fatalf("event resourceVersion %q is not cumulative over both members", last)
	}
	f.members["c2"].add("ns", "d")
	sc, closeWatch = open(last)
	defer closeWatch()
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"name":"b"`) || strings.Contains(sc.Text(), `"name":"a"`) {
			t.Errorf("resumed watch repeated an event: %s", sc.Text())
		}
		if strings.Contains(sc.Text(), `"name":"d"`) {
			break
		}
	}
	// Compacted past the version: the member's ERROR 410 reaches the client and the watch ends.
	f.members["c1"].add("ns", "e")
	f.members["c1"].compact()
	sc2, close2 := open(l.Metadata.ResourceVersion)
	defer close2()
	var lastLine string
	for sc2.Scan() {
		lastLine = sc2.Text()
	}
	if !strings.Contains(lastLine, `"type":"ERROR"`) || !strings.Contains(lastLine, `"code":410`) {
		t.Errorf("stale watch: last event %q, want ERROR 410", lastLine)
	}
}
