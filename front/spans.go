package proxy

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"gitlab.com/edge/edge/tracing"
)

// endSpan ends a request's server span with what the front learned of it: the route, cell and
// rule, the token's kind (never the token), agent, workspace, request id, cause and status.
func (w *recorder) endSpan(span trace.Span, r *http.Request) {
	status := w.status
	if status == 0 {
		status = statusClientClosed
	}
	span.SetName("edge " + w.route.String())
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attribute.String("edge.route", w.route.String()), attribute.String("edge.request_id", w.id[0]))
	if w.cell != 0 {
		attrs = append(attrs, attribute.Int64("edge.cell", int64(w.cell)))
	}
	if w.rule != "" {
		attrs = append(attrs, attribute.String("edge.rule", w.rule))
	}
	if w.route == RouteRunner {
		attrs = append(attrs, attribute.String("edge.token_kind", w.token.String()))
	}
	if w.agent != "" {
		attrs = append(attrs, attribute.String("edge.agent_id", w.agent))
	}
	if w.route == RouteWorkspace {
		attrs = append(attrs, attribute.String("edge.workspace", workspaceOf(r.Host)))
	}
	if w.cause != "" {
		attrs = append(attrs, attribute.String("edge.cause", w.cause))
	}
	tracing.End(span, status, attrs...)
}

// workspaceOf is the workspace of a workspace host, <port>-<workspace>.<domain>.
func workspaceOf(host string) string {
	label, _, _ := strings.Cut(hostOnly(host), ".")
	_, ws, _ := strings.Cut(label, "-")
	return ws
}
