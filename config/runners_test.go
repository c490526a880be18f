package config

import (
	"strings"
	"testing"
	"time"
)

// runners.admission: its defaults and the checks of each controller.
func TestAdmissionSection(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ctl.key", secret32)
	src := lines(
		"cells:",
		`  - {id: 1, url: "http://a", legacy: true}`,
		`  - {id: 2, url: "http://b"}`,
		"runners:",
		"  admission:",
		"    controllers:",
		`      - {name: policy, url: "http://127.0.0.1:7070/admit", secret_file: ctl.key}`,
		`      - {name: quota, agent: {id: a1, port: 8080, path: /admit}, cells: [2], on_error: admit, timeout: 500ms}`,
	)
	c := mustParse(t, dir, src)
	a := c.Runners.Admission
	if a.Mode != AdmissionEnabled || len(a.Controllers) != 2 || a.Controllers[0].Timeout.Duration != 2*time.Second ||
		a.Controllers[0].OnError != OnErrorReject || len(a.Controllers[0].Secret) == 0 || a.Controllers[1].Agent.Port != 8080 ||
		a.Controllers[1].Timeout.Duration != 500*time.Millisecond || a.Controllers[1].OnError != OnErrorAdmit {
		t.Errorf("admission: %+v", a)
	}
	for _, tt := range []struct{ ctl, path, msg string }{
		{`{name: x}`, "runners.admission.controllers[0]", "set url or agent"},
		{`{name: x, url: "http://a", agent: {id: a, port: 1, path: /}}`, "runners.admission.controllers[0]", "set url or agent"},
		{`{url: "http://a"}`, "runners.admission.controllers[0].name", "required"},
		{`{name: x, url: "ftp://a"}`, "runners.admission.controllers[0].url", "http(s)"},
		{`{name: x, agent: {id: a, port: 0, path: admit}}`, "runners.admission.controllers[0].agent.port", "not a port"},
		{`{name: x, url: "http://a", on_error: maybe}`, "runners.admission.controllers[0].on_error", "reject or admit"},
		{`{name: x, url: "http://a", timeout: 0s}`, "runners.admission.controllers[0].timeout", ""},
		{`{name: x, url: "http://a", cells: [9]}`, "runners.admission.controllers[0].cells[0]", "no cell has id 9"},
	} {
		_, ps := parse(t, dir, lines("cells:", `  - {id: 1, url: "http://a", legacy: true}`, "runners:", "  admission:", "    controllers:", "      - "+tt.ctl))
		found := false
		for _, p := range ps {
			found = found || p.Path == tt.path && strings.Contains(p.Message, tt.msg)
		}
		if !found {
			t.Errorf("%s: problems %v, want %s: %s", tt.ctl, ps, tt.path, tt.msg)
		}
	}
}
