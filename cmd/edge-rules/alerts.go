package main

// A threshold is a number or duration an operator tunes: a value of the chart
// (prometheusRule.thresholds.<name>) and, with its default, what deploy/prometheus/edge-rules.yaml
// says. An alert names it as ${name}.
type threshold struct {
	name, value, help string
}

func thresholds() []threshold {
	return []threshold{
		{"cellDownFor", "1m", "how long every address of a cell is down at an edge before EdgeCellDown fires"},
		{"ejectionsPer10m", "0", "ejections of a cell's addresses in 10 minutes above which EdgeCellEjected fires"},
		{"errorRatio", "0.05", "share of a route's requests answered 5xx by edge itself (EdgeErrorsHigh)"},
		{"errorMinRate", "0.1", "requests per second a route needs before its error share counts"},
		{"errorFor", "5m", "how long the error share stays high before EdgeErrorsHigh fires"},
		{"agentsDropRatio", "0.5", "share of the fleet's agent connections of 15 minutes ago below which EdgeAgentsDisconnected fires"},
		{"agentConnectsPerConnection", "3", "agent connects in 15 minutes per connection held above which EdgeAgentsFlapping fires"},
		{"registryDownFor", "1m", "how long the registry's Redis fails before EdgeRegistryUnreachable fires"},
		{"admissionErrorRatio", "0.1", "share of calls to an admission controller that fail (EdgeAdmissionControllerFailing)"},
		{"admissionP99Seconds", "1", "p99 of an admission controller's answers above which EdgeAdmissionControllerSlow fires"},
		{"certExpiryDays", "14", "days of validity left below which EdgeCertificateExpiring fires"},
		{"openFilesRatio", "0.8", "share of the process's open-file limit in use (each held long poll takes two) above which EdgeNearOpenFileLimit fires"},
		{"drainFor", "5m", "how long an edge may drain before EdgeDrainingTooLong fires"},
	}
}

// An alert is one rule; expr and description may name thresholds (${name}); description may use
// Prometheus's own templating ({{ $labels.cell }}, {{ $value }}).
type alert struct {
	name, severity, expr, forDur, summary, description string
}

func alerts() []alert {
	return []alert{
		{name: "EdgeCellDown", severity: "critical",
			expr:        `edge_cell_up == 0`,
			forDur:      "${cellDownFor}",
			summary:     "Cell {{ $labels.cell }} is down at {{ $labels.instance }}",
			description: "Every address of cell {{ $labels.cell }} is held down by this edge's health checks: its requests are answered 503 cell_unavailable."},
		{name: "EdgeCellEjected", severity: "warning",
			expr:        `sum by (cell) (increase(edge_cell_ejections_total[10m])) > ${ejectionsPer10m}`,
			summary:     "Addresses of cell {{ $labels.cell }} were ejected",
			description: "Edge took {{ $value | humanize }} addresses of cell {{ $labels.cell }} out of rotation in 10 minutes on passive evidence (refused connects, resets)."},
		{name: "EdgeErrorsHigh", severity: "critical",
			expr: `sum by (route) (rate(edge_route_errors_total{code="5xx"}[5m])) / sum by (route) (rate(edge_route_requests_total[5m])) > ${errorRatio}` +
				` and sum by (route) (rate(edge_route_requests_total[5m])) > ${errorMinRate}`,
			forDur:      "${errorFor}",
			summary:     "Edge fails {{ $value | humanizePercentage }} of route {{ $labels.route }}",
			description: "Edge itself answered 5xx to {{ $value | humanizePercentage }} of the requests on route {{ $labels.route }} (cells' own answers do not count)."},
		{name: "EdgeAgentsDisconnected", severity: "critical",
			expr:        `sum(edge_tunnel_connections) < ${agentsDropRatio} * sum(edge_tunnel_connections offset 15m)`,
			forDur:      "5m",
			summary:     "Agents of the fleet disconnected",
			description: "The fleet holds {{ $value }} agent tunnel connections, fewer than ${agentsDropRatio} of those it held 15 minutes ago."},
		{name: "EdgeAgentsFlapping", severity: "warning",
			expr:        `sum by (instance) (increase(edge_tunnel_connects_total{result="ok"}[15m])) > ${agentConnectsPerConnection} * clamp_min(sum by (instance) (edge_tunnel_connections), 1)`,
			forDur:      "15m",
			summary:     "Agents keep reconnecting to {{ $labels.instance }}",
			description: "{{ $value | humanize }} agent connects in 15 minutes at {{ $labels.instance }}, more than ${agentConnectsPerConnection} per connection it holds."},
		{name: "EdgeRegistryUnreachable", severity: "critical",
			expr:        `edge_registry_healthy == 0`,
			forDur:      "${registryDownFor}",
			summary:     "{{ $labels.instance }} cannot reach the registry",
			description: "The shared registry (Redis) fails for this edge: requests for agents held elsewhere get 503 registry_unavailable, organization moves cannot be made."},
		{name: "EdgeAdmissionControllerFailing", severity: "warning",
			expr:        `sum by (controller) (rate(edge_admission_errors_total[5m])) / sum by (controller) (rate(edge_admission_controller_duration_seconds_count[5m])) > ${admissionErrorRatio}`,
			forDur:      "5m",
			summary:     "Admission controller {{ $labels.controller }} fails",
			description: "{{ $value | humanizePercentage }} of the calls to admission controller {{ $labels.controller }} fail or time out: its on_error decides those jobs."},
		{name: "EdgeAdmissionControllerSlow", severity: "warning",
			expr:        `histogram_quantile(0.99, sum by (controller, le) (rate(edge_admission_controller_duration_seconds_bucket[5m]))) > ${admissionP99Seconds}`,
			forDur:      "10m",
			summary:     "Admission controller {{ $labels.controller }} is slow",
			description: "The p99 of admission controller {{ $labels.controller }}'s answers is {{ $value | humanizeDuration }}: every job handed out waits for it."},
		{name: "EdgeAdmissionJobsNotFailed", severity: "critical",
			expr:        `sum(increase(edge_admission_failed_jobs_total{outcome="gave_up"}[15m])) > 0`,
			summary:     "Rejected jobs could not be failed at their cell",
			description: "{{ $value | humanize }} jobs admission rejected could not be failed at their cell after retries: they stay running there until GitLab times them out."},
		{name: "EdgeCertificateExpiring", severity: "warning",
			expr:        `edge_tls_certificate_expiry_timestamp_seconds - time() < ${certExpiryDays} * 86400`,
			forDur:      "10m",
			summary:     "Certificate {{ $labels.name }} expires soon",
			description: "The {{ $labels.source }} certificate for {{ $labels.name }} at {{ $labels.instance }} expires in {{ $value | humanizeDuration }}."},
		{name: "EdgeACMEFailing", severity: "warning",
			expr:        `sum by (instance) (increase(edge_tls_acme_total{result="failed"}[1h])) > 0`,
			summary:     "{{ $labels.instance }} cannot get certificates from its ACME CA",
			description: "{{ $value | humanize }} certificate orders failed in the last hour at {{ $labels.instance }}."},
		{name: "EdgeReloadFailing", severity: "warning",
			expr:        `increase(edge_config_reloads_total{result="error"}[15m]) > 0`,
			summary:     "{{ $labels.instance }} refused a config reload",
			description: "A reload of edge.yaml failed at {{ $labels.instance }}: the config before it stays in force until the file is fixed."},
		{name: "EdgePanicsContained", severity: "warning",
			expr:        `sum by (instance, where) (increase(edge_panics_total[15m])) > 0`,
			summary:     "Panics contained at {{ $labels.instance }} ({{ $labels.where }})",
			description: "{{ $value | humanize }} panics in {{ $labels.where }} goroutines in 15 minutes: each ended a request, connection or stream, and the process kept serving. The stack is in the log (panic contained)."},
		{name: "EdgeNearOpenFileLimit", severity: "warning",
			expr:        `process_open_fds / process_max_fds > ${openFilesRatio}`,
			forDur:      "5m",
			summary:     "{{ $labels.instance }} is near its open-file limit",
			description: "{{ $labels.instance }} uses {{ $value | humanizePercentage }} of its open files: held long polls (two each) will soon be refused."},
		{name: "EdgeDrainingTooLong", severity: "warning",
			expr:        `edge_draining == 1`,
			forDur:      "${drainFor}",
			summary:     "{{ $labels.instance }} has been draining too long",
			description: "{{ $labels.instance }} has drained for more than ${drainFor}: requests that outlive shutdown.grace, or a stuck shutdown."},
	}
}
