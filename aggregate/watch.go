package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// event is one watch event of a member, or the end of its stream (err set, or io.EOF).
type event struct {
	member string
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
	err    error
}

// watch opens one upstream watch per member from its part of the global resourceVersion and
// merges the events: each is stamped with its cluster, and its resourceVersion becomes the
// cumulative global one, so a client can resume from any event. When one member's stream ends or
// sends ERROR (410 after compaction), that goes to the client and the watch ends: it relists.
func (p *Proxy) watch(w http.ResponseWriter, r *http.Request, req request, user User) {
	q := r.URL.Query()
	rv, special, err := decodeRV(q.Get("resourceVersion"))
	if err != nil {
		// What an apiserver does with a version it cannot use: 200, then an ERROR event.
		p.startStream(w)
		p.writeEvent(w, "ERROR", mustJSON(statusObject(http.StatusGone, "Expired", err.Error())))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	names := make([]string, len(p.sorted))
	for i, m := range p.sorted {
		names[i] = m.Name
	}
	done := p.watches.add(names, cancel)
	defer done()

	bodies, global, warnings, err := p.openWatches(ctx, r, req, user, rv, special)
	if err != nil {
		p.fail(w, err)
		return
	}
	for _, warn := range warnings {
		w.Header().Add("Warning", `299 - "`+warn+`; this watch lacks its events"`)
	}
	p.metrics.watchOpened()
	defer p.metrics.watchClosed()
	events := p.readEvents(ctx, bodies)
	p.startStream(w)
	for {
		var ev event
		select {
		case ev = <-events:
		case <-ctx.Done():
			return
		}
		if ev.err != nil {
			if !errors.Is(ev.err, io.EOF) && ctx.Err() == nil {
				p.log.Info("member watch stream broke; ending the watch", "member", ev.member, "error", ev.err)
			}
			return
		}
		if ev.Type == "ERROR" {
			p.writeEvent(w, ev.Type, ev.Object)
			return
		}
		if v := objectRV(ev.Object); v != "" {
			global[ev.member] = v
		}
		if err := p.writeEvent(w, ev.Type, stampEvent(ev.Object, ev.member, global.encode())); err != nil {
			p.log.Info("watch client not reading or gone; ending the watch", "error", err)
			return
		}
	}
}

// openWatches opens the watch of every member at its own resourceVersion (from the global one
// unless special), and returns their bodies (nil for a member left out), the global version they
// start from, and, with member_down: partial, a warning per unreachable member. On any other
// failure every body opened is closed again.
func (p *Proxy) openWatches(ctx context.Context, r *http.Request, req request, user User, rv globalRV, special bool) ([]io.ReadCloser, globalRV, []string, error) {
	q := r.URL.Query()
	bodies := make([]io.ReadCloser, len(p.sorted))
	global := globalRV{}
	var wg sync.WaitGroup
	errs := make([]error, len(p.sorted))
	for i, m := range p.sorted {
		mq := cloneQuery(q)
		if !special {
			own, ok := rv[m.Name]
			if !ok {
				own = "0"
			}
			mq.Set("resourceVersion", own)
			global[m.Name] = own
		}
		wg.Go(func() {
			defer p.o.Guard.Recover("aggregate_fetch", func(bool) { errs[i] = crashedAnswer(m).err })
			resp, err := p.call(ctx, m, http.MethodGet, req.path, mq.Encode(), nil, r.Header, user)
			if err != nil {
				errs[i] = err
				return
			}
			if resp.StatusCode != http.StatusOK {
				raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				errs[i] = &memberError{member: m.Name, code: resp.StatusCode, body: raw}
				return
			}
			bodies[i] = resp.Body
		})
	}
	wg.Wait()
	var warnings []string
	for _, err := range errs {
		if err == nil {
			continue
		}
		if unreachable(err) && p.o.Partial {
			warnings = append(warnings, err.Error())
			continue
		}
		for _, b := range bodies {
			if b != nil {
				b.Close()
			}
		}
		return nil, nil, nil, err
	}
	return bodies, global, warnings, nil
}

// readEvents decodes every member's stream into one channel, each event named by its member,
// until a stream ends (an event with err) or ctx does. A panic reading one is that stream's end:
// the watch ends and the client relists.
func (p *Proxy) readEvents(ctx context.Context, bodies []io.ReadCloser) <-chan event {
	events := make(chan event)
	for i, b := range bodies {
		if b == nil {
			continue
		}
		m := p.sorted[i]
		name := m.Name
		go func() {
			defer p.o.Guard.Recover("aggregate_watch", func(bool) {
				select {
				case events <- event{member: name, err: crashedAnswer(m).err}:
				case <-ctx.Done():
				}
			})
			defer b.Close()
			dec := json.NewDecoder(b)
			for {
				var ev event
				err := dec.Decode(&ev)
				ev.member, ev.err = name, err
				select {
				case events <- ev:
				case <-ctx.Done():
					return
				}
				if err != nil || ev.Type == "ERROR" {
					return
				}
			}
		}()
	}
	return events
}

func (p *Proxy) startStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
}

// eventWriteBound is how long one event may take to reach a watch's client: a client that stops
// reading is cut after it (its members' watches closed), as nginx's send_timeout cuts one.
const eventWriteBound = 60 * time.Second

func (p *Proxy) eventWriteBound() time.Duration {
	if p.o.EventWriteBound > 0 {
		return p.o.EventWriteBound
	}
	return eventWriteBound
}

// writeEvent writes one event within eventWriteBound; an error ends the watch.
func (p *Proxy) writeEvent(w http.ResponseWriter, typ string, obj json.RawMessage) error {
	b, _ := json.Marshal(struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}{typ, obj})
	rc := http.NewResponseController(w)
	bounded := rc.SetWriteDeadline(time.Now().Add(p.eventWriteBound())) == nil
	_, err := w.Write(append(b, '\n'))
	if err == nil {
		err = rc.Flush()
	}
	if bounded && err == nil {
		err = rc.SetWriteDeadline(time.Time{})
	}
	return err
}

// objectRV reads an event object's resourceVersion (a Table's own, or its single row's object's).
func objectRV(raw json.RawMessage) string {
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Rows []struct {
			Object struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
			} `json:"object"`
		} `json:"rows"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	if obj.Metadata.ResourceVersion == "" && len(obj.Rows) > 0 {
		return obj.Rows[0].Object.Metadata.ResourceVersion
	}
	return obj.Metadata.ResourceVersion
}

// stampEvent stamps an event's object with its cluster and sets its resourceVersion (and its
// Table rows' objects') to the cumulative global one.
func stampEvent(raw json.RawMessage, cluster, global string) json.RawMessage {
	var obj rawObject
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	setRV := func(metaRaw json.RawMessage) json.RawMessage {
		stamped := stampMeta(metaRaw, cluster)
		var meta rawObject
		if json.Unmarshal(stamped, &meta) != nil {
			return stamped
		}
		meta["resourceVersion"], _ = json.Marshal(global)
		out, _ := json.Marshal(meta)
		return out
	}
	if meta, ok := obj["metadata"]; ok {
		obj["metadata"] = setRV(meta)
	}
	if rows, ok := obj["rows"]; ok {
		var rs []tableRow
		if json.Unmarshal(rows, &rs) == nil {
			for _, row := range rs {
				if o, ok := row["object"]; ok {
					var ro rawObject
					if json.Unmarshal(o, &ro) == nil {
						if meta, ok := ro["metadata"]; ok {
							ro["metadata"] = setRV(meta)
						}
						row["object"], _ = json.Marshal(ro)
					}
				}
			}
			obj["rows"], _ = json.Marshal(rs)
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// Watches are the open watches of every Proxy of a process: a reload that removes or changes a
// member ends the watches that include it (clients relist), and leaves the others open.
type Watches struct {
	mu   sync.Mutex
	next int
	open map[int]openWatch
}

type openWatch struct {
	members []string
	cancel  context.CancelFunc
}

func NewWatches() *Watches { return &Watches{open: map[int]openWatch{}} }

func (ws *Watches) add(members []string, cancel context.CancelFunc) (done func()) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	id := ws.next
	ws.next++
	ws.open[id] = openWatch{members: members, cancel: cancel}
	return func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		delete(ws.open, id)
	}
}

// End ends every open watch that includes one of the members, and says how many it ended.
func (ws *Watches) End(members map[string]bool) int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	n := 0
	for id, w := range ws.open {
		for _, m := range w.members {
			if members[m] {
				w.cancel()
				delete(ws.open, id)
				n++
				break
			}
		}
	}
	return n
}

// Open counts the open watches that include each member.
func (ws *Watches) Open() map[string]int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := map[string]int{}
	for _, w := range ws.open {
		for _, m := range w.members {
			out[m]++
		}
	}
	return out
}

// TrackWatch registers a watch over members with ws, for callers that hold watches of their own
// (tests of reload wiring); done unregisters it.
func TrackWatch(ws *Watches, members []string, cancel context.CancelFunc) (done func()) {
	return ws.add(members, cancel)
}
