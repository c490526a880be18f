package server

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/internal/cli"
	"gitlab.com/edge/edge/tracing"
)

// newTracing is tracing: the tracer the front, the runner proxy and the agent router make their
// spans with (nil without a tracing section), and a stage that sends what is left when edge
// stops. The exporter is made once: a changed tracing section needs a restart.
func newTracing(cfg *config.Config, build BuildInfo) (*tracing.Tracer, module, error) {
	m := module{name: "tracing", settings: []setting{{name: "tracing", same: func(a, b *config.Config) bool {
		return reflect.DeepEqual(a.Tracing, b.Tracing)
	}}}}
	t, err := newTracer(cfg.Tracing, build)
	if err != nil || t == nil {
		return nil, m, err
	}
	// Last down: the spans of the drain are sent too.
	// It gets its own 5 s: the drain may have used up the grace by then.
	m.stages = []stage{{name: "tracing", phase: phaseOps, stop: func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = t.Shutdown(ctx)
	}}}
	return t, m, nil
}

// newTracer makes the tracer of a tracing section (edge's or an agent's); nil without one.
func newTracer(c *config.Tracing, build BuildInfo) (*tracing.Tracer, error) {
	if c == nil {
		return nil, nil
	}
	t, err := tracing.New(context.Background(), tracing.Options{Endpoint: c.Endpoint, Protocol: c.Protocol,
		SampleRatio: c.SampleRatio, ServiceName: c.ServiceName, Version: build.Version})
	if err != nil {
		return nil, cli.UsageError{Err: fmt.Errorf("tracing: %w", err)}
	}
	return t, nil
}

// NewAgentTracer is the tracer of an agent's tracing section, for `edge agent`; nil without one.
func NewAgentTracer(c *config.Tracing, build BuildInfo) (*tracing.Tracer, error) {
	return newTracer(c, build)
}
