package front

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"gitlab.com/edge/edge/hop"
)

// Path rule: edge classifies a request on its path as sent, and the cell acts on that same path.
// A backend (or a proxy in front of it) may read a path with dot segments, doubled slashes or
// encoded slashes as another path: /api/v4/x/../jobs/request is the job queue to Rails, not
// legacy traffic. Such a path is refused with 400 when it is, or would be once normalised, a
// runner path or under the aggregation prefix, or when normalising it would change its route. It
// is refused rather than normalised and forwarded: a normalised path is not the request the client
// signed or sent, no runner or Kubernetes client sends one, and a refusal is the one answer that
// cannot disagree with any backend's reading. Under the aggregation prefix, edge parses the path
// into a verb, resource and name, fans it out and checks it, so the member must serve exactly that
// path: configmaps/x%2F..%2F..%2Fapi%2Fv1%2Fsecrets is one name to edge and another resource to a
// member that decodes it.

// pathOdd tells whether a path, as sent, holds anything a backend may resolve: "//", a "." or
// ".." segment (plain or percent-encoded), or an encoded slash or backslash.
func pathOdd(u *url.URL) bool {
	raw := u.EscapedPath()
	if strings.Contains(raw, "//") || strings.ContainsRune(raw, '\\') {
		return true
	}
	if strings.IndexByte(raw, '%') >= 0 {
		lower := strings.ToLower(raw)
		if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(lower, "%2e") {
			return true
		}
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// normalPath is the path a lenient backend would act on: backslashes as slashes, doubled
// slashes collapsed, dot segments resolved.
func normalPath(decoded string) string {
	p := strings.ReplaceAll(decoded, "\\", "/")
	clean := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean
}

// checkPath applies the path rule; classify gives a path's route.
func checkPath(u *url.URL, classify func(string) *Route) error {
	if !pathOdd(u) {
		return nil
	}
	asSent := classify(u.Path)
	normal := classify(normalPath(u.Path))
	if asSent.StrictPath || normal.StrictPath || asSent != normal {
		return fmt.Errorf("%w: %q has dot segments, doubled or encoded slashes that a backend may read as another route", hop.ErrBadPath, u.EscapedPath())
	}
	return nil
}
