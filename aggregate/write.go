package aggregate

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
)

// maxWriteBody bounds an object edge reads to turn its resourceVersion back into the member's.
const maxWriteBody = 16 << 20

// streaming subresources pass through untouched both ways (logs, exec, attach, port-forward).
func streaming(sub string) bool {
	switch sub {
	case "log", "exec", "attach", "portforward", "proxy":
		return true
	}
	return strings.HasPrefix(sub, "proxy/")
}

// write sends a write or a subresource request to the member that owns the object (a collection
// create to the placement member), unbuffered for streams and upgrades; JSON objects have their
// global resourceVersion turned back into the member's on the way in, and out again on the way
// back.
func (p *Proxy) write(w http.ResponseWriter, r *http.Request, req request, user User) {
	var target *member
	switch {
	case req.verb == verbCreate && req.name == "":
		if p.o.Placement == "" {
			writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed",
				"create in the aggregated API needs a placement rule (aggregation.placement): which member should own the object?")
			return
		}
		target = p.byName[p.o.Placement]
	default:
		owner, a, err := p.owner(r.Context(), req, nil, r.Header, user)
		if err != nil {
			p.fail(w, err)
			return
		}
		if owner == nil {
			writeStatus(w, a.code, reasonOf(a.code), a.message)
			return
		}
		target = owner
	}
	rewrite := !streaming(req.subresource) && !isUpgrade(r)
	if rewrite && r.Body != nil && r.Body != http.NoBody && strings.Contains(r.Header.Get("Content-Type"), "json") {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxWriteBody+1))
		if err != nil || len(body) > maxWriteBody {
			writeStatus(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "the object is too large")
			return
		}
		out, ok := unstamp(body, target.Name)
		if !ok {
			writeStatus(w, http.StatusConflict, "Conflict", fmt.Sprintf("the object's resourceVersion does not name member cluster %s, which owns it; get it again", target.Name))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(out))
		r.ContentLength = int64(len(out))
		r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target.base)
			pr.Out.URL.Path = target.base.Path + req.path
			pr.Out.URL.RawPath = ""
			pr.Out.Host = ""
			for k := range pr.Out.Header {
				if strings.HasPrefix(k, "Impersonate-") {
					delete(pr.Out.Header, k)
				}
			}
			pr.Out.Header.Set("Authorization", "Bearer "+target.Token)
			pr.Out.Header.Set("Impersonate-User", user.Name)
			for _, g := range user.Groups {
				pr.Out.Header.Add("Impersonate-Group", g)
			}
		},
		Transport:     target.client.Transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.fail(w, &memberError{member: target.Name, err: err})
		},
	}
	if rewrite {
		rp.ModifyResponse = func(resp *http.Response) error {
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || resp.StatusCode >= 300 {
				return nil
			}
			body, err := io.ReadAll(io.LimitReader(resp.Body, maxWriteBody))
			resp.Body.Close()
			if err != nil {
				return err
			}
			out := stamp(body, target.Name)
			resp.Body = io.NopCloser(bytes.NewReader(out))
			resp.ContentLength = int64(len(out))
			resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
			return nil
		}
	}
	rp.ServeHTTP(w, r)
}

func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != ""
}
