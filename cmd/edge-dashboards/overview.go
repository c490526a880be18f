package main

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

func overview() *dashboard.DashboardBuilder {
	return edgeDashboard("edge-overview", "edge: overview", "Every edge of the job: traffic, cells, agents, runner queues, admission and health.").
		WithRow(dashboard.NewRowBuilder("Requests")).
		WithPanel(graph("Requests by route and status class", "reqps", half,
			query(by("sum", "route, code", rate("edge_route_requests_total")), "{{route}} {{code}}"))).
		WithPanel(graph("Edge-made errors by route and cause", "reqps", half,
			query(by("sum", "route, cause", rate("edge_route_errors_total")), "{{route}} {{cause}}")).
			Description("Answers edge made itself (refusals, errors, answers cut short), not a cell's.")).
		WithPanel(graph("Latency p50 and p99 by route", "s", half,
			query(quantile("0.5", "route", "edge_request_duration_seconds"), "p50 {{route}}"),
			query(quantile("0.99", "route", "edge_request_duration_seconds"), "p99 {{route}}"))).
		WithPanel(graph("Requests in flight by kind", "short", half,
			query(by("sum", "kind", sel("edge_requests_in_flight")), "{{kind}}")).
			Description("Held long polls included.")).
		WithRow(dashboard.NewRowBuilder("Cells")).
		WithPanel(upDown(single("Cells up", "", third,
			query(by("min", "cell", sel("edge_cell_up")), "cell {{cell}}")), "up", "down").
			Height(8).
			Description("The worst view of any edge: down when one edge sees the cell down.")).
		WithPanel(bars("Ejections by cell and evidence", third,
			query(by("sum", "cell, evidence", increase("$__rate_interval", "edge_cell_ejections_total")), "cell {{cell}} {{evidence}}"))).
		WithPanel(graph("Upstream errors by cell and cause", "reqps", third,
			query(by("sum", "target, cause", rate("edge_upstream_errors_total")), "cell {{target}} {{cause}}"))).
		WithRow(dashboard.NewRowBuilder("Agents and held polls")).
		WithPanel(graph("Agents connected per edge", "short", third,
			query(by("sum", "instance", sel("edge_tunnel_connections")), "{{instance}}"))).
		WithPanel(graph("Agent connects by result", "ops", third,
			query(by("sum", "result", rate("edge_tunnel_connects_total")), "{{result}}"))).
		WithPanel(graph("Held polls", "short", third,
			query(by("sum", "instance", sel("edge_parked_polls")), "parked {{instance}}"),
			query(by("sum", "", sel("edge_runner_polls_held")), "runner polls held, all edges")).
			Description("Long polls parked on each edge, and the runner jobs/request polls held across all edges.")).
		WithRow(dashboard.NewRowBuilder("Runner queues by capability")).
		WithPanel(graph("Held polls by capability", "short", third,
			query(by("sum", "capability", sel("edge_runner_polls_held")), "{{capability}}"))).
		WithPanel(graph("Polls by capability and answer", "reqps", third,
			query(by("sum", "capability, answer", rate("edge_runner_polls_total")), "{{capability}} {{answer}}"))).
		WithPanel(graph("Job wait p90 by capability", "s", third,
			query(quantile("0.9", "capability", "edge_runner_job_wait_seconds"), "{{capability}}")).
			Description("How long a poll that got a job waited for it.")).
		WithPanel(labelTable("Capabilities",
			by("max", "capability, executor, platform, architecture", sel("edge_runner_capability_info")))).
		WithRow(dashboard.NewRowBuilder("Admission")).
		WithPanel(graph("Admission decisions by controller and decision", "ops", third,
			query(by("sum", "controller, decision", rate("edge_admission_decisions_total")), "{{controller}} {{decision}}"))).
		WithPanel(graph("Admission controller errors", "ops", third,
			query(by("sum", "controller", rate("edge_admission_errors_total")), "{{controller}}"))).
		WithPanel(graph("Admission controller latency p99", "s", third,
			query(quantile("0.99", "controller", "edge_admission_controller_duration_seconds"), "{{controller}}"))).
		WithRow(dashboard.NewRowBuilder("Health")).
		WithPanel(upDown(single("Registry healthy", "", quarter,
			query(by("min", "instance", sel("edge_registry_healthy")), "{{instance}}")), "healthy", "failing")).
		WithPanel(counted(single("Panics in range", "short", quarter,
			query(by("sum", "where", increase("$__range", "edge_panics_total")), "{{where}}")), true)).
		WithPanel(counted(single("Config reloads in range", "short", quarter,
			query(by("sum", "result", increase("$__range", "edge_config_reloads_total")), "{{result}}")), false)).
		WithPanel(counted(single("Organization moves in force", "short", quarter,
			query(by("max", "phase", sel("edge_org_moves")), "{{phase}}")), false)).
		WithPanel(labelTable("Builds",
			by("max", "instance, version, commit, goversion", sel("edge_build_info"))))
}
