package server

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"gitlab.com/edge/edge/admission"
	"gitlab.com/edge/edge/cellrouter"
	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/internal/guard"
)

// agentPorts reaches a port of an agent through its tunnel: the agent router, for the admission
// controllers that live behind an agent.
type agentPorts interface {
	Transport(agentID string, port int) http.RoundTripper
}

// jobAdmission is runners.admission: the controllers asked about every job a cell hands out,
// each reached by its URL or through its agent. The transports outlive reloads; the runner proxy
// of each config gets that config's controllers.
type jobAdmission struct {
	controllers http.RoundTripper // to those with a URL
	agents      agentPorts        // to those behind an agent
	guard       *guard.Guard
}

func newAdmission(d deps, agents agentPorts) *jobAdmission {
	return &jobAdmission{
		controllers: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
		},
		agents: agents,
		guard:  d.guard,
	}
}

func (j *jobAdmission) module() module {
	return module{name: "admission",
		settings: []setting{
			{name: "runners", reload: true, same: func(a, b *config.Config) bool { return config.SameRunners(a.Runners, b.Runners) }},
		},
	}
}

// of builds the admission of one config (nil without runners.admission): each controller
// reached by its URL or through its agent, its calls signed when it has a secret.
func (j *jobAdmission) of(cfg *config.Config) (*cellrouter.Admission, error) {
	a := cfg.Runners.Admission
	if a == nil {
		return nil, nil
	}
	out := &cellrouter.Admission{DryRun: a.Mode == config.AdmissionDryRun}
	for i, c := range a.Controllers {
		ctl := &admission.Controller{Name: c.Name, URL: c.URL, Transport: j.controllers, Timeout: c.Timeout.Duration,
			AdmitOnError: c.OnError == config.OnErrorAdmit, Cells: c.Cells, Guard: j.guard}
		if g := c.Agent; g != nil {
			ctl.URL, ctl.Transport = "http://admission.agent"+g.Path, j.agents.Transport(g.ID, g.Port)
		}
		if len(c.Secret) > 0 {
			sign, err := admission.HS256(c.Secret)
			if err != nil {
				return nil, fmt.Errorf("runners.admission.controllers[%d].secret_file: %w", i, err)
			}
			ctl.Sign = sign
		}
		out.Controllers = append(out.Controllers, ctl)
	}
	return out, nil
}
