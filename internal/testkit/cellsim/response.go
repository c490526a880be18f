package cellsim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// statusClientClosed is what a canceled request is recorded with (nginx's 499): nobody is
// left to receive an answer.
const statusClientClosed = 499

// response is what a route answers; serve writes it after the request is recorded, so a
// client that has its answer can rely on the record being there.
type response struct {
	status int
	header http.Header
	body   []byte
}

func jsonResponse(status int, v any) response {
	b, err := json.Marshal(v)
	if err != nil {
		return textResponse(http.StatusInternalServerError, err.Error())
	}
	return response{status: status, header: http.Header{"Content-Type": {"application/json"}}, body: b}
}

func textResponse(status int, s string) response {
	return response{status: status, header: http.Header{"Content-Type": {"text/plain"}}, body: []byte(s)}
}

// messageResponse is how the GitLab API words its errors: {"message":"403 Forbidden"}.
func messageResponse(status int) response {
	return jsonResponse(status, map[string]string{"message": strconv.Itoa(status) + " " + http.StatusText(status)})
}

func emptyResponse(status int) response { return response{status: status, header: http.Header{}} }

func (r response) with(key, value string) response {
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set(key, value)
	return r
}

func canceledResponse() response { return response{status: statusClientClosed} }
