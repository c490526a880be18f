package aggregate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// maxListBody bounds what edge reads of one member's answer.
const maxListBody = 256 << 20

// discovery proxies to the primary member: the first in config order that answers.
func (p *Proxy) discovery(w http.ResponseWriter, r *http.Request, req request, user User) {
	var last error
	for _, m := range p.members {
		resp, err := p.call(r.Context(), m, r.Method, req.path, r.URL.RawQuery, nil, r.Header, user)
		if err != nil {
			last = err
			continue
		}
		defer resp.Body.Close()
		copyHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		return
	}
	p.fail(w, last)
}

// call sends one request to a member and counts it.
func (p *Proxy) call(ctx context.Context, m *member, method, path, rawQuery string, body io.Reader, in http.Header, user User) (*http.Response, error) {
	req, err := m.newRequest(ctx, method, path, rawQuery, body, in, user)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := m.client.Do(req)
	if err == nil || ctx.Err() == nil {
		// A call its caller ended is no outcome of the member's.
		p.metrics.observe(m.Name, resp, err, time.Since(start))
	}
	if err != nil {
		return nil, p.unavailable(ctx, m, in, err)
	}
	return resp, nil
}

// unavailable is the error of a member that did not answer whole. When ctx ended first, the
// caller went away (or its watch was ended): no failure of the member's, so nothing is written
// for it (fail) and nothing logged. Otherwise the member is logged with the cause and the
// request's id, the one place that says why a read failed or lacks its objects.
func (p *Proxy) unavailable(ctx context.Context, m *member, in http.Header, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("member cluster %s: %w", m.Name, ctx.Err())
	}
	p.log.Warn("member cluster unavailable", "member", m.Name, "request_id", in.Get("X-Request-Id"), "error", err)
	return &memberError{member: m.Name, err: err}
}

// memberAnswer is one member's part of a fan-out.
type memberAnswer struct {
	m    *member
	body listBody
	raw  []byte
	err  error
}

// crashedAnswer is a member's part of a fan-out whose call panicked: unavailable, as a member
// that cannot be reached is.
func crashedAnswer(m *member) memberAnswer {
	return memberAnswer{m: m, err: &memberError{member: m.Name, err: errCrashed}}
}

// fetch reads a member's JSON answer; a status other than 200 is a memberError with its body.
func (p *Proxy) fetch(ctx context.Context, m *member, path string, q url.Values, in http.Header, user User) memberAnswer {
	resp, err := p.call(ctx, m, http.MethodGet, path, q.Encode(), nil, in, user)
	if err != nil {
		return memberAnswer{m: m, err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxListBody))
	if err != nil {
		return memberAnswer{m: m, err: p.unavailable(ctx, m, in, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return memberAnswer{m: m, err: &memberError{member: m.Name, code: resp.StatusCode, body: raw}}
	}
	a := memberAnswer{m: m, raw: raw}
	if a.body, err = parseList(raw); err != nil {
		a.err = p.unavailable(ctx, m, in, fmt.Errorf("answer is not JSON: %w", err))
	}
	return a
}

// list fans out to every member, or pages through them in name order with limit/continue.
func (p *Proxy) list(w http.ResponseWriter, r *http.Request, req request, user User) {
	q := r.URL.Query()
	if q.Get("limit") != "" || q.Get("continue") != "" {
		p.pagedList(w, r, req, user, q)
		return
	}
	rv, special, err := decodeRV(q.Get("resourceVersion"))
	if err != nil {
		p.fail(w, err)
		return
	}
	answers := make([]memberAnswer, len(p.sorted))
	var wg sync.WaitGroup
	for i, m := range p.sorted {
		mq := cloneQuery(q)
		if !special {
			own, ok := rv[m.Name]
			if !ok {
				own = "0"
			}
			mq.Set("resourceVersion", own)
		}
		wg.Go(func() {
			defer p.o.Guard.Recover("aggregate_fetch", func(bool) { answers[i] = crashedAnswer(m) })
			answers[i] = p.fetch(r.Context(), m, req.path, mq, r.Header, user)
		})
	}
	wg.Wait()
	p.merge(w, r, answers)
}

// merge writes the merged list or Table of the members' answers: items (rows) concatenated in
// member order, each stamped with its cluster, under the global resourceVersion.
func (p *Proxy) merge(w http.ResponseWriter, r *http.Request, answers []memberAnswer) {
	var out listBody
	global := globalRV{}
	var warnings []string
	first := true
	for _, a := range answers {
		if a.err != nil {
			if unreachable(a.err) && p.o.Partial {
				warnings = append(warnings, a.err.Error())
				continue
			}
			p.fail(w, a.err)
			return
		}
		if first {
			out.Kind, out.APIVersion, out.Columns = a.body.Kind, a.body.APIVersion, a.body.Columns
			first = false
		}
		if a.body.Metadata.ResourceVersion != "" {
			global[a.m.Name] = a.body.Metadata.ResourceVersion
		}
		for _, it := range a.body.Items {
			out.Items = append(out.Items, stampFast(it, a.m.Name))
		}
		for _, row := range a.body.Rows {
			out.Rows = append(out.Rows, stampRow(row, a.m.Name))
		}
	}
	if first {
		writeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", "no member cluster answered")
		return
	}
	out.Metadata.ResourceVersion = global.encode()
	p.writeList(w, out, isTable(r.Header.Get("Accept")), warnings)
}

// writeList writes the merged list; the items (rows) are written as they are, not re-encoded.
func (p *Proxy) writeList(w http.ResponseWriter, out listBody, table bool, warnings []string) {
	for _, warn := range warnings {
		w.Header().Add("Warning", `299 - `+strconv.Quote(warn+"; this answer lacks its objects"))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	kind, _ := json.Marshal(out.Kind)
	apiVersion, _ := json.Marshal(out.APIVersion)
	meta, _ := json.Marshal(out.Metadata)
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"kind":`)
	bw.Write(kind)
	bw.WriteString(`,"apiVersion":`)
	bw.Write(apiVersion)
	bw.WriteString(`,"metadata":`)
	bw.Write(meta)
	elems, key := out.Items, `,"items":[`
	if table {
		columns := out.Columns
		if len(columns) == 0 {
			columns = json.RawMessage("[]")
		}
		bw.WriteString(`,"columnDefinitions":`)
		bw.Write(columns)
		elems, key = out.Rows, `,"rows":[`
	}
	bw.WriteString(key)
	for i, e := range elems {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(e)
	}
	bw.WriteString("]}\n")
	bw.Flush()
}

// pagedList walks the members in name order: the limit counts down across them, and the
// continue token says which member the next page starts in and where.
func (p *Proxy) pagedList(w http.ResponseWriter, r *http.Request, req request, user User, q url.Values) {
	limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
	start, memberContinue := 0, ""
	global := globalRV{}
	if c := q.Get("continue"); c != "" {
		tok, err := decodeContinue(c)
		if err != nil {
			p.fail(w, err)
			return
		}
		if p.byName[tok.Cluster] == nil {
			writeStatus(w, http.StatusGone, "Expired", fmt.Sprintf("the continue token names member cluster %s, which is no longer served; list again", tok.Cluster))
			return
		}
		g, special, err := decodeRV(tok.RV)
		if err != nil {
			p.fail(w, err)
			return
		}
		if !special {
			global = g
		}
		for i, m := range p.sorted {
			if m.Name == tok.Cluster {
				start = i
			}
		}
		memberContinue = tok.Continue
	}
	var out listBody
	var warnings []string
	table := isTable(r.Header.Get("Accept"))
	first := true
	for i := start; i < len(p.sorted); i++ {
		m := p.sorted[i]
		mq := cloneQuery(q)
		mq.Del("continue")
		if i == start && memberContinue != "" {
			mq.Set("continue", memberContinue)
			mq.Del("resourceVersion")
			mq.Del("resourceVersionMatch")
		}
		if limit > 0 {
			mq.Set("limit", strconv.FormatInt(limit, 10))
		}
		a := p.fetch(r.Context(), m, req.path, mq, r.Header, user)
		if a.err != nil && unreachable(a.err) && p.o.Partial {
			warnings = append(warnings, a.err.Error())
			continue
		}
		if a.err != nil {
			p.fail(w, a.err)
			return
		}
		if first {
			out.Kind, out.APIVersion, out.Columns = a.body.Kind, a.body.APIVersion, a.body.Columns
			first = false
		}
		if a.body.Metadata.ResourceVersion != "" {
			global[m.Name] = a.body.Metadata.ResourceVersion
		}
		n := int64(len(a.body.Items) + len(a.body.Rows))
		for _, it := range a.body.Items {
			out.Items = append(out.Items, stampFast(it, m.Name))
		}
		for _, row := range a.body.Rows {
			out.Rows = append(out.Rows, stampRow(row, m.Name))
		}
		if limit > 0 {
			limit -= n
		}
		switch {
		case a.body.Metadata.Continue != "":
			out.Metadata.Continue = continueToken{RV: global.encode(), Cluster: m.Name, Continue: a.body.Metadata.Continue}.encode()
		case limit <= 0 && q.Get("limit") != "" && i+1 < len(p.sorted):
			out.Metadata.Continue = continueToken{RV: global.encode(), Cluster: p.sorted[i+1].Name}.encode()
		default:
			continue
		}
		break
	}
	if first {
		writeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", "no member cluster answered")
		return
	}
	out.Metadata.ResourceVersion = global.encode()
	p.writeList(w, out, table, warnings)
}

// get finds the object on every member: 404 when none has it, 409 when more than one does.
func (p *Proxy) get(w http.ResponseWriter, r *http.Request, req request, user User) {
	owner, a, err := p.owner(r.Context(), req, r.URL.Query(), r.Header, user)
	if err != nil {
		p.fail(w, err)
		return
	}
	if owner == nil {
		writeStatus(w, a.code, reasonOf(a.code), a.message)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(stamp(a.raw, owner.Name))
}

// ownerAnswer is the owner's answer to a get, or why there is no single owner.
type ownerAnswer struct {
	raw     []byte
	code    int
	message string
}

// owner asks every member for the object, as the caller: nobody learns of objects they may not
// read.
func (p *Proxy) owner(ctx context.Context, req request, q url.Values, in http.Header, user User) (*member, ownerAnswer, error) {
	objPath := req.path
	if req.subresource != "" {
		objPath = objectPath(req)
		q = url.Values{}
	}
	h := in.Clone()
	h.Set("Accept", "application/json")
	answers := make([]memberAnswer, len(p.sorted))
	var wg sync.WaitGroup
	for i, m := range p.sorted {
		wg.Go(func() {
			defer p.o.Guard.Recover("aggregate_fetch", func(bool) { answers[i] = crashedAnswer(m) })
			answers[i] = p.fetch(ctx, m, objPath, q, h, user)
		})
	}
	wg.Wait()
	var owners []memberAnswer
	forbidden := ""
	for _, a := range answers {
		var me *memberError
		switch {
		case a.err == nil:
			owners = append(owners, a)
		case errors.As(a.err, &me) && me.code == http.StatusNotFound:
		case errors.As(a.err, &me) && me.code == http.StatusForbidden:
			forbidden = a.m.Name
		case unreachable(a.err) && p.o.Partial:
		default:
			return nil, ownerAnswer{}, a.err
		}
	}
	switch {
	case len(owners) == 1:
		return owners[0].m, ownerAnswer{raw: owners[0].raw}, nil
	case len(owners) > 1:
		return nil, ownerAnswer{code: http.StatusConflict, message: fmt.Sprintf("%s %q exists in more than one member cluster (%s and %s); names must be unique across members",
			req.resource, req.name, owners[0].m.Name, owners[1].m.Name)}, nil
	case forbidden != "":
		return nil, ownerAnswer{code: http.StatusForbidden, message: fmt.Sprintf("member cluster %s: forbidden", forbidden)}, nil
	}
	return nil, ownerAnswer{code: http.StatusNotFound, message: fmt.Sprintf("%s %q not found", req.resource, req.name)}, nil
}

// objectPath is the path of the object a subresource belongs to.
func objectPath(req request) string {
	prefix := "/api/" + req.version
	if req.group != "" {
		prefix = "/apis/" + req.group + "/" + req.version
	}
	if req.namespace != "" && req.resource != "namespaces" {
		prefix += "/namespaces/" + req.namespace
	}
	return prefix + "/" + req.resource + "/" + req.name
}

func cloneQuery(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}
