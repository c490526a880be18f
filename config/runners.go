package config

import (
	"slices"
	"strings"
	"time"
)

// defaultControllerTimeout is how long an admission controller has to answer.
const defaultControllerTimeout = 2 * time.Second

// Runners is what edge does with runner traffic beyond routing it.
type Runners struct {
	Admission *Admission `yaml:"admission"` // nil: no admission, nothing asked
}

// Admission asks controllers about every job a cell hands out, before a runner gets it.
type Admission struct {
	Mode        string                `yaml:"mode"` // enabled or dry_run
	Controllers []AdmissionController `yaml:"controllers"`
}

// The admission modes and what a failing controller means.
const (
	AdmissionEnabled = "enabled"
	AdmissionDryRun  = "dry_run"
	OnErrorReject    = "reject"
	OnErrorAdmit     = "admit"
)

// AdmissionController is one controller: an HTTP URL, or a path on a port behind an agent.
type AdmissionController struct {
	Name       string           `yaml:"name"`
	URL        string           `yaml:"url"`
	Agent      *ControllerAgent `yaml:"agent"`
	Timeout    Duration         `yaml:"timeout"`
	OnError    string           `yaml:"on_error"`
	Cells      []uint64         `yaml:"cells"` // empty: every cell
	SecretFile string           `yaml:"secret_file"`
	Secret     []byte           `yaml:"-"` // signs each call as an HS256 JWT; empty: unsigned
}

// ControllerAgent reaches a controller through an agent's tunnel.
type ControllerAgent struct {
	ID   string `yaml:"id"`
	Port int    `yaml:"port"`
	Path string `yaml:"path"`
}

func (a *Admission) setDefaults() { a.Mode = AdmissionEnabled }

func (c *AdmissionController) setDefaults() {
	c.Timeout, c.OnError = Duration{defaultControllerTimeout}, OnErrorReject
}

func (a *Admission) readFiles(f *files) {
	for i := range a.Controllers {
		c := &a.Controllers[i]
		c.Secret = f.secret(index("runners.admission.controllers", i)+".secret_file", &c.SecretFile)
	}
}

func (c *Config) validateRunners(ch *checker) {
	a := c.Runners.Admission
	if a == nil {
		return
	}
	const p = "runners.admission"
	if a.Mode != AdmissionEnabled && a.Mode != AdmissionDryRun {
		ch.add(p+".mode", "must be %s or %s", AdmissionEnabled, AdmissionDryRun)
	}
	if len(a.Controllers) == 0 {
		ch.add(p+".controllers", "at least one controller is required")
	}
	names := map[string]int{}
	for i, ctl := range a.Controllers {
		cp := index(p+".controllers", i)
		switch j, dup := names[ctl.Name]; {
		case ctl.Name == "":
			ch.add(cp+".name", "required")
		case dup:
			ch.add(cp+".name", "%q is controllers[%d]'s name already", ctl.Name, j)
		default:
			names[ctl.Name] = i
		}
		switch {
		case (ctl.URL == "") == (ctl.Agent == nil):
			ch.add(cp, "set url or agent, one of them")
		case ctl.URL != "":
			requireURL(ch, cp+".url", ctl.URL)
		default:
			if ctl.Agent.ID == "" {
				ch.add(cp+".agent.id", "required")
			}
			if ctl.Agent.Port < 1 || ctl.Agent.Port > 65535 {
				ch.add(cp+".agent.port", "%d is not a port", ctl.Agent.Port)
			}
			if !strings.HasPrefix(ctl.Agent.Path, "/") {
				ch.add(cp+".agent.path", "must be an absolute path, like /admit")
			}
		}
		positive(ch, cp+".timeout", ctl.Timeout)
		if ctl.OnError != OnErrorReject && ctl.OnError != OnErrorAdmit {
			ch.add(cp+".on_error", "must be %s or %s", OnErrorReject, OnErrorAdmit)
		}
		for j, id := range ctl.Cells {
			if !slices.ContainsFunc(c.Cells, func(cell Cell) bool { return cell.ID == id }) {
				ch.add(index(cp+".cells", j), "no cell has id %d", id)
			}
		}
		checkSecret(ch, cp+".secret_file", ctl.SecretFile, ctl.Secret, false, "")
	}
}
