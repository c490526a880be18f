package aggregate

import (
	"encoding/json"
	"net/http"
)

// writeStatus answers with a metav1.Status, as an apiserver does, so kubectl and client-go show
// the message and act on the reason.
func writeStatus(w http.ResponseWriter, code int, reason, message string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(statusObject(code, reason, message))
}

// WriteError answers, as a Status like every answer of the Proxy, an error found before the
// request reached it (the front's path rule): the reason follows the HTTP status. It fits
// proxy.PrefixRoute.WriteError; the cause label is the front's, for its logs and metrics.
func WriteError(w http.ResponseWriter, status int, _, message string) {
	writeStatus(w, status, reasonOf(status), message)
}

func statusObject(code int, reason, message string) map[string]any {
	return map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": message, "reason": reason, "code": code,
	}
}

// reasonOf is the Status reason of an HTTP status, as apimachinery names them.
func reasonOf(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowed"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusGone:
		return "Expired"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	case http.StatusGatewayTimeout:
		return "Timeout"
	}
	return "InternalError"
}
