package cellrouter

import (
	"mime"
	"net/http"
	"net/url"
	"strings"

	"gitlab.com/edge/edge/hop"
)

// TokenSource says where in a request a token was found.
type TokenSource uint8

const (
	SourceNone TokenSource = iota
	SourceRunnerTokenHeader
	SourceJobTokenHeader
	SourcePrivateTokenHeader
	SourceAuthorizationHeader
	SourceQueryToken
	SourceQueryJobToken
	SourceQueryPrivateToken
	SourceJSONBody
	SourceFormBody
)

func (s TokenSource) String() string {
	switch s {
	case SourceRunnerTokenHeader:
		return "header:RUNNER-TOKEN"
	case SourceJobTokenHeader:
		return "header:JOB-TOKEN"
	case SourcePrivateTokenHeader:
		return "header:PRIVATE-TOKEN"
	case SourceAuthorizationHeader:
		return "header:Authorization"
	case SourceQueryToken:
		return "query:token"
	case SourceQueryJobToken:
		return "query:job_token"
	case SourceQueryPrivateToken:
		return "query:private_token"
	case SourceJSONBody:
		return "body:json"
	case SourceFormBody:
		return "body:form"
	}
	return "none"
}

type foundToken struct {
	source TokenSource
	value  string
}

// maxTokens bounds how many tokens one request can make edge look at.
const maxTokens = 8

type foundTokens struct {
	list [maxTokens]foundToken
	n    int
}

func (f *foundTokens) add(source TokenSource, value string) {
	value = strings.TrimSpace(value)
	if value == "" || f.n == len(f.list) {
		return
	}
	f.list[f.n] = foundToken{source, value}
	f.n++
}

func (f *foundTokens) all() []foundToken { return f.list[:f.n] }

// headerAndQueryTokens collects tokens from headers, then the query, in that order.
func headerAndQueryTokens(r *http.Request, f *foundTokens) {
	// tokens.md section 3's order, with canonical keys so no canonicalisation per request.
	h := r.Header
	if v := h["Runner-Token"]; len(v) > 0 {
		f.add(SourceRunnerTokenHeader, v[0])
	}
	if v := h["Job-Token"]; len(v) > 0 {
		f.add(SourceJobTokenHeader, v[0])
	}
	if v := h["Private-Token"]; len(v) > 0 {
		f.add(SourcePrivateTokenHeader, v[0])
	}
	if v := h["Authorization"]; len(v) > 0 {
		if token, ok := hop.Bearer(v[0]); ok {
			f.add(SourceAuthorizationHeader, token)
		}
	}
	if r.URL.RawQuery != "" && strings.Contains(r.URL.RawQuery, "token") {
		q, _ := url.ParseQuery(r.URL.RawQuery)
		// Rack keeps the last of repeated parameters; so must edge.
		for _, s := range [...]TokenSource{SourceQueryToken, SourceQueryJobToken, SourceQueryPrivateToken} {
			if v := q[queryKey(s)]; len(v) > 0 {
				f.add(s, v[len(v)-1])
			}
		}
	}
}

type bodyFormat uint8

const (
	bodyOther bodyFormat = iota
	bodyJSON
	bodyForm
)

// bodyFormatOf tells whether a body may carry a `token` field edge can read.
func bodyFormatOf(contentType string) bodyFormat {
	switch contentType {
	case "application/json":
		return bodyJSON
	case "application/x-www-form-urlencoded":
		return bodyForm
	case "":
		return bodyOther
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return bodyOther
	}
	switch {
	case mediaType == "application/json", strings.HasSuffix(mediaType, "+json"):
		return bodyJSON
	case mediaType == "application/x-www-form-urlencoded":
		return bodyForm
	}
	return bodyOther
}

// bodyToken finds the `token` field of a complete JSON or form body.
func bodyToken(format bodyFormat, body []byte) (foundToken, bool) {
	switch format {
	case bodyJSON:
		if v, ok := topLevelString(body, "token"); ok {
			return foundToken{SourceJSONBody, v}, true
		}
	case bodyForm:
		q, err := url.ParseQuery(string(body))
		if err != nil {
			return foundToken{}, false
		}
		if v := q["token"]; len(v) > 0 {
			return foundToken{SourceFormBody, v[len(v)-1]}, true
		}
	}
	return foundToken{}, false
}

func queryKey(s TokenSource) string {
	switch s {
	case SourceQueryJobToken:
		return "job_token"
	case SourceQueryPrivateToken:
		return "private_token"
	}
	return "token"
}
