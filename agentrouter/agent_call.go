package agentrouter

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// maxAgentCallAnswer bounds the answer edge holds of one of its own calls through a tunnel.
const maxAgentCallAnswer = 1 << 20

// errAgentCallTooLarge is an answer to edge's own call that passed maxAgentCallAnswer.

// Transport is a RoundTripper for edge's own small calls to a port behind an agent (an
// admission controller in the cluster that runs the jobs): each request takes the path a user's
// request to that agent takes, its tunnel here or the edge that holds it, waiting as long as the
// request's context allows. The answer is held in memory, at most 1 MiB.
func (a *AgentRouter) Transport(agentID string, port int) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		w := &heldAnswer{header: http.Header{}}
		a.Forward(w, req, AgentTarget{AgentID: agentID, Port: port, Path: req.URL.Path, RawPath: req.URL.RawPath})
		if w.err != nil {
			return nil, w.err
		}
		if w.status == 0 {
			if err := req.Context().Err(); err != nil {
				return nil, err
			}
			w.status = http.StatusOK
		}
		return &http.Response{
			Status: strconv.Itoa(w.status) + " " + http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: w.header, Body: io.NopCloser(bytes.NewReader(w.body.Bytes())), ContentLength: int64(w.body.Len()),
			Request: req,
		}, nil
	})
}

// heldAnswer is a ResponseWriter that keeps a small answer in memory.
type heldAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
	err    error
}

func (h *heldAnswer) Header() http.Header { return h.header }

func (h *heldAnswer) WriteHeader(status int) {
	if h.status == 0 && status >= 200 {
		h.status = status
	}
}

func (h *heldAnswer) Write(p []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	if h.body.Len()+len(p) > maxAgentCallAnswer {
		h.err = errAgentCallTooLarge
		return 0, h.err
	}
	return h.body.Write(p)
}
