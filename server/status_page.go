package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"

	"gitlab.com/edge/edge/hop"
)

// statusCSS is the page's only style, allowed by its hash: the page loads nothing else, runs no
// script and refreshes itself with a meta tag.
const statusCSS = `body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.up{color:#076b2c;font-weight:600}.down{color:#b00020;font-weight:600}.degraded{color:#8a4b00;font-weight:600}.muted{color:#777}`

const statusHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
<title>edge status</title><style>{{.CSS}}</style></head><body>
{{with .S.Edge}}<h1>edge {{.Version}}</h1>
<table>
<tr><th>commit</th><td>{{.Commit}} ({{.GoVersion}})</td></tr>
<tr><th>config</th><td>{{.Config}} <span class="muted">sha256 {{.ConfigSHA256}}</span></td></tr>
<tr><th>started</th><td>{{.Started.Format "2006-01-02 15:04:05Z07:00"}}, up {{.Uptime}}{{if .Draining}} <span class="down">draining</span>{{end}}</td></tr>
<tr><th>last reload</th><td id="reload">{{.LastReload.Result}}{{if not .LastReload.Time.IsZero}} at {{.LastReload.Time.Format "15:04:05Z07:00"}}{{end}}, generation {{.LastReload.Generation}}{{with .LastReload.Error}}: {{.}}{{end}}</td></tr>
<tr><th>features</th><td>{{range .Features}}{{.}} {{end}}</td></tr>
</table>{{end}}
<h2>Cells</h2>
<table><tr><th>cell</th><th>state</th><th>addresses</th><th>recent requests</th><th>p50</th><th>p99</th></tr>
{{range .S.Cells}}<tr id="cell-{{.ID}}"><td>{{.ID}}{{if .Legacy}} (legacy){{end}}</td>
{{$state := "down"}}{{if .Degraded}}{{$state = "degraded"}}{{else if .Up}}{{$state = "up"}}{{end}}<td class="{{$state}}">{{$state}}{{if .Degraded}} <span class="muted">(every address ejected: dialled anyway)</span>{{end}}{{if not .Checked}} <span class="muted">(no checks)</span>{{end}}</td>
<td>{{range .Addresses}}<div>{{.URL}} {{if .Up}}<span class="up">up</span>{{else if .CheckedDown}}<span class="down">down</span>{{else}}<span class="degraded">ejected</span>{{end}}{{if .CheckedDown}} check failing{{end}}{{if .EjectedBy}} by {{.EjectedBy}} failures until {{.EjectedUntil.Format "15:04:05"}}{{end}}{{with .GatewayFailures}}, {{.}} gateway failures in a row{{end}}, {{.InFlight}} in flight</div>{{end}}</td>
<td>{{.Recent.Requests}}{{range $class, $n := .Recent.Statuses}} · {{$class}} {{$n}}{{end}}</td><td>{{.P50}}</td><td>{{.P99}}</td></tr>
{{end}}</table>
<h2>Agents held here</h2>
{{if .S.AgentsHere}}<table><tr><th>agent</th><th>connection</th><th>since</th><th>version</th></tr>
{{range .S.AgentsHere}}<tr><td>{{.AgentID}}</td><td>{{.ConnectionID}}</td><td>{{.Since.Format "2006-01-02 15:04:05Z07:00"}}</td><td>{{.Version}}</td></tr>{{end}}
</table>{{else}}<p class="muted">none</p>{{end}}
<h2>Agents across the fleet</h2>
{{with .S.FleetError}}<p class="down">registry: {{.}}</p>{{end}}
{{if .S.Fleet}}<table><tr><th>agent</th><th>connection</th><th>holder edge</th><th>since</th></tr>
{{range .S.Fleet}}<tr><td>{{.AgentID}}</td><td>{{.ConnectionID}}</td><td>{{.Edge}}</td><td>{{.Since.Format "2006-01-02 15:04:05Z07:00"}}</td></tr>{{end}}
</table>{{else}}<p class="muted">none</p>{{end}}
<h2>Organization moves in force</h2>
{{if .S.Moves}}<table><tr><th>organization</th><th>cell</th><th>from</th><th>phase</th><th>since</th></tr>
{{range .S.Moves}}<tr><td>{{.Org}}</td><td>{{.Cell}}</td><td>{{if .From}}{{.From}}{{else}}<span class="muted">not known</span>{{end}}</td><td class="{{if eq .Phase.String "freeze"}}degraded{{else}}up{{end}}">{{.Phase}}</td><td>{{.Since.Format "2006-01-02 15:04:05Z07:00"}}</td></tr>{{end}}
</table>{{else}}<p class="muted">none</p>{{end}}
<h2>Peer edges</h2>
{{if .S.Peers}}<ul>{{range .S.Peers}}<li>{{.}}</li>{{end}}</ul>{{else}}<p class="muted">none seen in the registry</p>{{end}}
{{if .S.Aggregation}}<h2>Aggregation members</h2>
<table><tr><th>member</th><th>server</th><th>last answer</th><th>open watches</th></tr>
{{range .S.Aggregation}}<tr><td>{{.Name}}</td><td>{{.Server}}</td><td>{{if .Last.At.IsZero}}<span class="muted">none yet</span>{{else}}<span class="{{if eq .Last.Outcome "unreachable" "5xx"}}down{{else}}up{{end}}">{{.Last.Outcome}}</span> at {{.Last.At.Format "15:04:05"}}{{end}}</td><td>{{.OpenWatches}}</td></tr>{{end}}</table>{{end}}
{{if .S.Certificates}}<h2>Certificates</h2>
<table><tr><th>source</th><th>names</th><th>expires</th></tr>
{{range .S.Certificates}}<tr><td>{{.Source}}</td><td>{{range .Names}}{{.}} {{end}}</td><td>{{.NotAfter.Format "2006-01-02 15:04Z07:00"}} (in {{.ExpiresIn}})</td></tr>{{end}}</table>{{end}}
<h2>Latest refusals</h2>
{{if .S.Refusals}}<table><tr><th>time</th><th>status</th><th>cause</th><th>route</th><th>request</th><th>request id</th></tr>
{{range .S.Refusals}}<tr><td>{{.Time.Format "15:04:05.000"}}</td><td>{{.Status}}</td><td>{{.Cause}}</td><td>{{.Route}}</td><td>{{.Method}} {{.Host}}{{.Path}}</td><td>{{.RequestID}}</td></tr>{{end}}
</table>{{else}}<p class="muted">none</p>{{end}}
</body></html>
`

// statusPage renders the status page; the template and its CSP are made once.
type statusPage struct {
	tmpl *template.Template
	csp  string
}

func newStatusPage() *statusPage {
	sum := sha256.Sum256([]byte(statusCSS))
	return &statusPage{
		tmpl: template.Must(template.New("status").Parse(statusHTML)),
		csp: "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
			"base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	}
}

func (p *statusPage) serveHTML(w http.ResponseWriter, s Status) {
	var buf bytes.Buffer
	if err := p.tmpl.Execute(&buf, struct {
		S   Status
		CSS template.CSS
	}{s, template.CSS(statusCSS)}); err != nil {
		hop.Write(w, http.StatusInternalServerError, "status_page", err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", p.csp)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(buf.Bytes())
}

func (p *statusPage) serveJSON(w http.ResponseWriter, s Status) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s)
}
