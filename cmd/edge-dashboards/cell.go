package main

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// cellOnly and targetOnly pick $cell among the labels that name a cell.
const (
	cellOnly   = `cell="$cell"`
	targetOnly = `target="$cell"`
)

func cell() *dashboard.DashboardBuilder {
	return edgeDashboard("edge-cell", "edge: cell", "One cell as the edges see it: health, traffic, runner polls and admission.").
		WithVariable(queryVariable("cell", "label_values(edge_cell_up, cell)")).
		WithRow(dashboard.NewRowBuilder("Cell $cell")).
		WithPanel(upDown(single("Up", "", quarter,
			query(by("min", "", sel("edge_cell_up", cellOnly)), "cell $cell")), "up", "down").
			Description("Down when any edge sees the cell down.")).
		WithPanel(upDown(single("Addresses up", "", full-quarter,
			query(by("min", "address", sel("edge_cell_address_up", cellOnly)), "{{address}}")), "up", "down")).
		WithRow(dashboard.NewRowBuilder("Traffic")).
		WithPanel(graph("Requests by kind and status class", "reqps", half,
			query(by("sum", "kind, code", rate("edge_requests_total", targetOnly)), "{{kind}} {{code}}"))).
		WithPanel(graph("Upstream errors by cause", "reqps", half,
			query(by("sum", "cause", rate("edge_upstream_errors_total", targetOnly)), "{{cause}}"))).
		WithPanel(bars("Ejections by evidence", half,
			query(by("sum", "evidence", increase("$__rate_interval", "edge_cell_ejections_total", cellOnly)), "{{evidence}}"))).
		WithPanel(graph("Admission jobs by verdict", "ops", half,
			query(by("sum", "verdict, mode", rate("edge_admission_jobs_total", cellOnly)), "{{verdict}} ({{mode}})"))).
		WithRow(dashboard.NewRowBuilder("Runner polls")).
		WithPanel(graph("Held polls by capability", "short", third,
			query(by("sum", "capability", sel("edge_runner_polls_held", cellOnly)), "{{capability}}"))).
		WithPanel(graph("Polls by answer", "reqps", third,
			query(by("sum", "answer", rate("edge_runner_polls_total", cellOnly)), "{{answer}}"))).
		WithPanel(graph("Job wait p50 and p99", "s", third,
			query(quantile("0.5", "", "edge_runner_job_wait_seconds", cellOnly), "p50"),
			query(quantile("0.99", "", "edge_runner_job_wait_seconds", cellOnly), "p99")))
}
