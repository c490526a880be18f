package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// aggRig is two member clusters that are fault upstreams speaking just enough of the Kubernetes
// API for a list and a watch of configmaps, the namespace naming the case: m1 commits the case's
// fault, m2 answers whole; and the edges that aggregate them under /k8s.
type aggRig struct {
	members [2]*faultUpstream
	faults  [2]caseFaults
	token   string
	dir     string
	n       int
}

var memberNames = [2]string{"m1", "m2"}

func newAggRig(t *testing.T) *aggRig {
	g := &aggRig{token: randomKubeToken(t), dir: t.TempDir()}
	for i := range g.members {
		g.members[i] = newFaultUpstream(t, g.memberPlan(i))
	}
	return g
}

// aggEdge is one edge over the rig's members: member_down "" (a list with a member down fails
// with 503 naming it) or "partial" (the others' items and a Warning naming it).
type aggEdge struct {
	partial bool
	e       *edgeProc
	procs   procSet // the edge
	addr    string
}

func (g *aggRig) edge(t *testing.T, memberDown string) *aggEdge {
	tokensFile, memberToken := filepath.Join(g.dir, "tokens.csv"), filepath.Join(g.dir, "member.token")
	writeFile(t, tokensFile, []byte(g.token+",admin,1,\"system:masters\"\n"))
	writeFile(t, memberToken, []byte("edge-at-the-member"))
	agg := &aggregationConfig{Prefix: "/k8s", Auth: aggAuthConfig{TokensFile: tokensFile}, MemberDown: memberDown}
	for i, u := range g.members {
		agg.Clusters = append(agg.Clusters, clusterConfig{Name: memberNames[i], Server: u.url(), TokenFile: memberToken})
	}
	e := startEdge(t, edgeConfig{
		Cells:       []cellConfig{{ID: 1, URL: "http://127.0.0.1:9", Legacy: true}},
		Routing:     routingConfig{TrustedProxies: []string{"127.0.0.1/32"}},
		Aggregation: agg,
	})
	return &aggEdge{partial: memberDown == "partial", e: e, procs: procSet{watchEdge(e)}, addr: strings.TrimPrefix(e.PublicURL, "http://")}
}

func configMap(ns, name, rv string, pad int) string {
	return `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"` + name + `","namespace":"` + ns + `","resourceVersion":"` + rv + `"},` +
		`"data":{"pad":"` + strings.Repeat("p", pad) + `"}}`
}

// memberPlan answers GET /api/v1/namespaces/<case>/configmaps: a list of one object
// (<case>-<member>), 256 of 64 KiB for the form "big" (more than loopback's buffers hold for a
// client that does not read); with ?watch=1, a stream of ADDED events (two of m1's, one of
// m2's; 2,048 of 16 KiB for "big"), then the watch held open.
func (g *aggRig) memberPlan(i int) func(*http.Request, []byte) faultPlan {
	name, rv := memberNames[i], fmt.Sprint(100*(i+1))
	return func(req *http.Request, _ []byte) faultPlan {
		ns, _, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/api/v1/namespaces/"), "/")
		c := g.faults[i].get(ns, g.members[i].count(ns))
		p := faultPlan{id: ns, fault: c.fault, hold: c.hold}
		if w := req.URL.Query().Get("watch"); w == "1" || w == "true" {
			n, pad := 2-i, 16
			if c.form == "big" {
				n, pad = 2048, 16<<10
			}
			for k := range n {
				obj := configMap(ns, fmt.Sprintf("%s-%s-%d", ns, name, k), fmt.Sprint(100*(i+1)+k+1), pad)
				p.events = append(p.events, `{"type":"ADDED","object":`+obj+"}\n")
			}
			return p
		}
		items, n, pad := []string{configMap(ns, ns+"-"+name, rv, 16)}, 1, 0
		if c.form == "big" {
			n, pad = 256, 64<<10
			items = items[:0]
		}
		for k := range n - len(items) {
			items = append(items, configMap(ns, fmt.Sprintf("%s-%s-%d", ns, name, k), rv, pad))
		}
		p.body = `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"` + rv + `"},"items":[` + strings.Join(items, ",") + `]}`
		return p
	}
}

func (g *aggRig) request(id string, watch bool) string {
	target := "/k8s/api/v1/namespaces/" + id + "/configmaps"
	if watch {
		target += "?watch=1"
	}
	return "GET " + target + " HTTP/1.1\r\nHost: edge.test\r\nAuthorization: Bearer " + g.token +
		"\r\nAccept: application/json\r\nUser-Agent: kubectl/v1.32.0 (faults)\r\nX-Request-Id: " + id + "\r\n\r\n"
}

// kubeObject is what the client reads of a list's item or a watch event's object, and of a Status.
type kubeObject struct {
	Kind     string `json:"kind"`
	Code     int    `json:"code"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Items []kubeObject `json:"items"`
}

// ownObjects checks that every object is the case's own, stamped with the member it names; it
// returns their names.
func ownObjects(t *testing.T, id string, objs []kubeObject) []string {
	t.Helper()
	var names []string
	for _, o := range objs {
		cluster := o.Metadata.Annotations["edge.k8s.io/cluster"]
		if o.Metadata.Namespace != id || !strings.HasPrefix(o.Metadata.Name, id+"-"+cluster) || !slices.Contains(memberNames[:], cluster) {
			t.Errorf("the client got object %s/%s of cluster %q: not this case's own", o.Metadata.Namespace, o.Metadata.Name, cluster)
		}
		names = append(names, o.Metadata.Name)
	}
	slices.Sort(names)
	return names
}

// memberDown: a Status 503 naming m1, what a list or watch gets when a member is down (the
// default member_down).
func memberDown(t *testing.T, status int, body string) {
	t.Helper()
	var st kubeObject
	if status != http.StatusServiceUnavailable || json.Unmarshal([]byte(body), &st) != nil || st.Kind != "Status" ||
		st.Code != http.StatusServiceUnavailable || st.Reason != "ServiceUnavailable" || !strings.Contains(st.Message, "member cluster m1") {
		t.Errorf("got %d %q, want a Status 503 ServiceUnavailable naming member cluster m1", status, body)
	}
}

func warnsOfM1(t *testing.T, h http.Header) {
	t.Helper()
	if w := strings.Join(h.Values("Warning"), " "); !strings.Contains(w, "m1") {
		t.Errorf("Warning %q, want one naming m1", w)
	}
}

// aggCase is one case on one edge: before it the members have no connection; after it a
// control list on the connections it left, the members' connections released (none held, no
// watch open), their idle ones closed, and edge back to what it held before.
type aggCase struct {
	g      *aggRig
	ae     *aggEdge
	id     string
	before []procState
	marks  []int
	conn   net.Conn
	br     *bufio.Reader
}

func (g *aggRig) begin(t *testing.T, ae *aggEdge, kind, fault string, m1 caseFault) *aggCase {
	g.n++
	c := &aggCase{g: g, ae: ae, id: fmt.Sprintf("%s%d-%s", kind, g.n, fault)}
	for _, u := range g.members {
		u.closeConns()
	}
	c.before, c.marks = ae.procs.state(t), ae.procs.marks()
	g.faults[0].set(c.id, m1)
	conn, err := net.Dial("tcp", ae.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.conn, c.br = conn, bufio.NewReader(conn)
	return c
}

// end closes the client's connection and checks what every case must hold; cause, when set, is
// what a line of edge's log since the case began must hold.
func (c *aggCase) end(t *testing.T, cause ...string) {
	t.Helper()
	c.conn.Close()
	c.ae.procs.alive(t)
	for i, u := range c.g.members {
		if n := u.count(c.id); n > 1 {
			t.Errorf("%s saw the request %d times, want at most once", memberNames[i], n)
		}
	}
	c.g.control(t, c.ae)
	poll.UntilState(t, 2*time.Second, "the members' connections released (none held, no watch open)", func() (bool, string) {
		a, b := c.g.members[0].busy(), c.g.members[1].busy()
		return a == 0 && b == 0, fmt.Sprintf("m1 %d, m2 %d", a, b)
	})
	if n, err := metricSum(c.ae.e.OpsURL+"/metrics", "edge_aggregation_watch_streams", ""); err != nil || n != 0 {
		t.Errorf("edge_aggregation_watch_streams %v (%v), want 0", n, err)
	}
	for _, u := range c.g.members {
		u.closeConns()
	}
	c.ae.procs.settled(t, c.before)
	logHas(t, c.ae.e.process, c.marks[0], "msg=access", "request_id="+c.id+" ")
	if len(cause) > 0 {
		logHas(t, c.ae.e.process, c.marks[0], cause...)
	}
}

// control is a list no member faults on, on the connections the case left: both items, the
// client's own (an answer's extra bytes must not become the next request's).
func (g *aggRig) control(t *testing.T, ae *aggEdge) {
	t.Helper()
	g.n++
	id := fmt.Sprintf("control%d", g.n)
	conn, err := net.Dial("tcp", ae.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, g.request(id, false))
	r := readAnswer(conn, bufio.NewReader(conn), 5*time.Second)
	var list kubeObject
	if r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &list) != nil {
		t.Fatalf("control list %s: %d %q, want 200 and a list", id, r.status, r.body)
	}
	if got := ownObjects(t, id, list.Items); !slices.Equal(got, []string{id + "-m1", id + "-m2"}) {
		t.Errorf("control list %s: items %v, want both members' one", id, got)
	}
}

// TestFaultMatrixAggregation drives a list and a watch through two edges (member_down default
// and partial) with every upstream fault at member m1 (m2 answers whole), and lists and watches
// with the client faults; every case asserts edge alive, what the spec gives the client (a
// failing member: 503 naming it, or the others' items with a Warning; a watch whose member's
// stream breaks or ends: the watch ends), only the case's own objects, each member asked at most
// once, no goroutine, file, member connection or open watch left 2 s after, an access line, and
// a line naming the cause of a failure.
func TestFaultMatrixAggregation(t *testing.T) {
	start := time.Now()
	stopReading := startWatchStopReading(t) // a minute of its own, beside the rest
	g := newAggRig(t)
	edges := []*aggEdge{g.edge(t, ""), g.edge(t, "partial")}
	cases := map[string]int{}
	for _, ae := range edges {
		policy := "default"
		if ae.partial {
			policy = "partial"
		}
		g.control(t, ae)
		for _, up := range upstreamFaults {
			cases["list"]++
			t.Run("list/"+policy+"/"+up, func(t *testing.T) { g.listFault(t, ae, up) })
			cases["watch"]++
			t.Run("watch/"+policy+"/"+up, func(t *testing.T) { g.watchFault(t, ae, up) })
		}
	}
	for _, cli := range []string{cliResetHeld, cliHalfCloseHeld, cliStopReading} {
		cases["list, client"]++
		t.Run("list/client-"+cli, func(t *testing.T) { g.listClientFault(t, edges[0], cli) })
	}
	for _, cli := range []string{cliResetHeld, "reset-mid-watch", "half-close-mid-watch"} {
		cases["watch, client"]++
		t.Run("watch/client-"+cli, func(t *testing.T) { g.watchClientFault(t, edges[0], cli) })
	}
	cases["watch, client"]++
	t.Run("watch/client-"+cliStopReading, stopReading)
	t.Logf("aggregation fault matrix: %v cases in %v", cases, time.Since(start).Round(time.Millisecond))
}

func (g *aggRig) listFault(t *testing.T, ae *aggEdge, up string) {
	c := g.begin(t, ae, "list", up, caseFault{fault: up})
	io.WriteString(c.conn, g.request(c.id, false))
	patience := 5 * time.Second
	if up == upStall || up == upStallMidBody {
		patience = 1500 * time.Millisecond
	}
	r := readAnswer(c.conn, c.br, patience)
	var list kubeObject
	json.Unmarshal([]byte(r.body), &list)
	switch {
	case answered(up):
		if got := ownObjects(t, c.id, list.Items); r.status != http.StatusOK || !slices.Equal(got, []string{c.id + "-m1", c.id + "-m2"}) {
			t.Errorf("got %d %q, want 200 and both members' items", r.status, r.body)
		}
		c.end(t)
		return
	case up == upStall || up == upStallMidBody:
		// No timeout applies to a member's answer: the client waits until it gives up.
		if r.status != 0 {
			t.Errorf("got %d %q, want nothing until the client gives up", r.status, r.body)
		}
		c.end(t)
		return
	case ae.partial:
		if got := ownObjects(t, c.id, list.Items); r.status != http.StatusOK || !slices.Equal(got, []string{c.id + "-m2"}) {
			t.Errorf("got %d %q, want 200 and m2's item only", r.status, r.body)
		}
		warnsOfM1(t, r.header)
	default:
		memberDown(t, r.status, r.body)
	}
	c.unavailable(t)
}

// unavailable ends a case whose member m1 failed the request: a line names m1, the cause and
// the request.
func (c *aggCase) unavailable(t *testing.T) {
	t.Helper()
	c.end(t, `msg="member cluster unavailable"`, "member=m1 ", "request_id="+c.id+" ", "error=")
}

// watchResult is what a watch's client read: the answer's head, its events, and how the stream
// stood at the end: "open" (nothing more within the wait), "ended" (edge ended it), "cut" (the
// connection broke mid-stream).
type watchResult struct {
	status int
	header http.Header
	body   string // an answer other than 200
	events []kubeObject
	end    string
}

// readWatch reads a watch's answer and events until want events came (then 300 ms more, to see
// whether the stream stays open) or the stream ends, within patience.
func readWatch(t *testing.T, conn net.Conn, br *bufio.Reader, want int, patience time.Duration) watchResult {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(patience))
	defer conn.SetReadDeadline(time.Time{})
	var w watchResult
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		w.end = "cut"
		if isTimeoutErr(err) {
			w.end = "open"
		}
		return w
	}
	w.status, w.header = resp.StatusCode, resp.Header
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		w.body = string(b)
		return w
	}
	lines := bufio.NewReader(resp.Body)
	for {
		if len(w.events) >= want {
			conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		}
		line, err := lines.ReadString('\n')
		if err == nil {
			var ev struct {
				Type   string     `json:"type"`
				Object kubeObject `json:"object"`
			}
			if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != "ADDED" {
				t.Errorf("the client got %q, not a whole ADDED event", line)
			}
			w.events = append(w.events, ev.Object)
			continue
		}
		switch {
		case line != "":
			t.Errorf("the stream ended inside an event: %q (%v)", line, err)
			w.end = "cut"
		case isTimeoutErr(err):
			w.end = "open"
		case errors.Is(err, io.EOF):
			w.end = "ended"
		default:
			w.end = "cut"
		}
		return w
	}
}

func (g *aggRig) watchFault(t *testing.T, ae *aggEdge, up string) {
	c := g.begin(t, ae, "watch", up, caseFault{fault: up})
	io.WriteString(c.conn, g.request(c.id, true))
	patience := 5 * time.Second
	if up == upStall {
		patience = 1500 * time.Millisecond
	}
	want := 3
	switch {
	case up == upStallMidBody:
		want = 2 // half of m1's stream is its first event
	case ae.partial && !answered(up):
		want = 1 // m2's, when m1's watch does not open
	}
	w := readWatch(t, c.conn, c.br, want, patience)
	names := ownObjects(t, c.id, w.events)
	all := []string{c.id + "-m1-0", c.id + "-m1-1", c.id + "-m2-0"}
	switch up {
	case upNone:
		if w.status != http.StatusOK || w.end != "open" || !slices.Equal(names, all) {
			t.Errorf("got %d, events %v, stream %s; want 200, every event of both members, the watch open", w.status, names, w.end)
		}
		c.end(t)
	case upStall:
		// No timeout applies to opening a member's watch: the client waits until it gives up.
		if w.status != 0 {
			t.Errorf("got %d %q, want nothing until the client gives up", w.status, w.body)
		}
		c.end(t)
	case upCloseStatus, upResetStatus, upCloseHeaders, upResetHeaders, upInterimClose:
		if !ae.partial {
			memberDown(t, w.status, w.body)
		} else {
			if w.status != http.StatusOK || w.end != "open" || !slices.Equal(names, all[2:]) {
				t.Errorf("got %d, events %v, stream %s; want 200, m2's event, the watch open", w.status, names, w.end)
			}
			warnsOfM1(t, w.header)
		}
		c.unavailable(t)
	case upStallMidBody:
		// A member's stream that stops mid-event is a watch with nothing to say yet.
		if w.status != http.StatusOK || w.end != "open" {
			t.Errorf("got %d, events %v, stream %s; want 200, the watch open", w.status, names, w.end)
		}
		c.end(t)
	case upExtraBytes:
		// m1's stream ended whole: the watch ends, the client relists.
		if w.status != http.StatusOK || w.end != "ended" || !slices.Contains(names, all[0]) || !slices.Contains(names, all[1]) {
			t.Errorf("got %d, events %v, stream %s; want 200, m1's events, the watch ended", w.status, names, w.end)
		}
		c.end(t)
	default:
		// m1's stream broke: the watch ends, the client relists.
		if w.status != http.StatusOK || w.end != "ended" {
			t.Errorf("got %d, events %v, stream %s; want 200, the watch ended", w.status, names, w.end)
		}
		c.end(t, `msg="member watch stream broke; ending the watch"`, "member=m1")
	}
}

func (g *aggRig) listClientFault(t *testing.T, ae *aggEdge, cli string) {
	m1 := caseFault{hold: time.Second}
	if cli == cliStopReading {
		m1 = caseFault{form: "big"}
	}
	c := g.begin(t, ae, "list", "cli-"+cli, m1)
	if cli == cliStopReading {
		g.faults[1].set(c.id, m1)
	}
	io.WriteString(c.conn, g.request(c.id, false))
	g.members[0].waitRequest(t, c.id, "m1 has the request")
	switch cli {
	case cliResetHeld:
		time.Sleep(100 * time.Millisecond)
		reset(c.conn)
		g.members[0].wantAbandoned(t, c.id, "m1")
	case cliHalfCloseHeld:
		c.conn.(*net.TCPConn).CloseWrite()
		if ok, got := endsWithoutAnswer(c.conn, 5*time.Second); !ok {
			t.Errorf("half-closed client got %q, want the connection ended with nothing", got)
		}
		g.members[0].wantAbandoned(t, c.id, "m1")
	case cliStopReading:
		time.Sleep(500 * time.Millisecond)
		reset(c.conn)
	}
	c.end(t)
}

func (g *aggRig) watchClientFault(t *testing.T, ae *aggEdge, cli string) {
	m1 := caseFault{}
	if cli == cliResetHeld {
		m1.hold = time.Second
	}
	c := g.begin(t, ae, "watch", "cli-"+cli, m1)
	io.WriteString(c.conn, g.request(c.id, true))
	switch cli {
	case cliResetHeld:
		g.members[0].waitRequest(t, c.id, "m1 has the watch")
		time.Sleep(100 * time.Millisecond)
		reset(c.conn)
		g.members[0].wantAbandoned(t, c.id, "m1")
	case "reset-mid-watch":
		if w := readWatch(t, c.conn, c.br, 3, 5*time.Second); len(w.events) != 3 {
			t.Errorf("got %d events, want 3 before the reset", len(w.events))
		}
		reset(c.conn)
	case "half-close-mid-watch":
		w := readWatch(t, c.conn, c.br, 3, 5*time.Second)
		c.conn.(*net.TCPConn).CloseWrite()
		if len(w.events) != 3 {
			t.Errorf("got %d events, want 3 before the half-close", len(w.events))
		}
	}
	c.end(t)
}

// startWatchStopReading starts, on a rig of its own, a watch whose client reads nothing while m1
// floods events (32 MiB): edge must cut it once an event has waited for the client longer than
// its bound (60 s, aggregate's eventWriteBound) and close both members' watches. It takes a
// minute, so it runs beside the other cases (waiting without t, which it may outlive when -run
// leaves it out); the returned subtest waits for it and judges.
func startWatchStopReading(t *testing.T) func(*testing.T) {
	g := newAggRig(t)
	ae := g.edge(t, "")
	g.control(t, ae)
	c := g.begin(t, ae, "watch", "cli-"+cliStopReading, caseFault{form: "big"})
	io.WriteString(c.conn, g.request(c.id, true))
	began := time.Now()
	cut := make(chan time.Duration, 1)
	go func() {
		for time.Since(began) < 80*time.Second {
			if g.members[0].count(c.id) == 1 && g.members[0].busy() == 0 && g.members[1].busy() == 0 {
				cut <- time.Since(began)
				return
			}
			time.Sleep(poll.Interval)
		}
		close(cut)
	}()
	return func(t *testing.T) {
		took, ok := <-cut
		if !ok {
			t.Fatalf("edge did not cut a watch whose client stopped reading within 80 s")
		}
		t.Logf("edge cut a watch whose client stopped reading after %v", took.Round(100*time.Millisecond))
		c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := io.Copy(io.Discard, c.conn); isTimeoutErr(err) {
			t.Errorf("the client read %d bytes and the connection is still open, want it closed", n)
		}
		c.end(t, `msg="watch client not reading or gone; ending the watch"`)
	}
}
