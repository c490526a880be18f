package front

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/tracing"
)

// endSpan ends a request's server span with what the front learned of it: the route, cell and
// rule, the token's kind (never the token), agent, workspace, request id, cause and status.
func endSpan(w *hop.Record, span trace.Span, r *http.Request, route *Route) {
	status := w.StatusOrClosed()
	span.SetName("edge " + w.Route)
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attribute.String("edge.route", w.Route), attribute.String("edge.request_id", w.ID[0]))
	if w.Cell != 0 {
		attrs = append(attrs, attribute.Int64("edge.cell", int64(w.Cell)))
	}
	if w.Rule != "" {
		attrs = append(attrs, attribute.String("edge.rule", w.Rule))
	}
	if w.Token != "" {
		attrs = append(attrs, attribute.String("edge.token_kind", w.Token))
	}
	if w.Agent != "" {
		attrs = append(attrs, attribute.String("edge.agent_id", w.Agent))
	}
	if route.Domain != "" {
		attrs = append(attrs, attribute.String("edge.workspace", workspaceOf(r.Host)))
	}
	if w.Cause != "" {
		attrs = append(attrs, attribute.String("edge.cause", w.Cause))
	}
	tracing.End(span, status, attrs...)
}

// workspaceOf is the workspace of a workspace host, <port>-<workspace>.<domain>.
func workspaceOf(host string) string {
	label, _, _ := strings.Cut(hostOnly(host), ".")
	_, ws, _ := strings.Cut(label, "-")
	return ws
}
