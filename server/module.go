// Package server runs edge's features as modules: each is built by a factory from the config
// and the modules it needs, adds its routes to the front door's table, declares its listeners
// and stages, and owns its reload rules. Serve, Check and Explain loop over the modules; the
// command line (cmd/edge) only parses flags and calls them.
package server

import (
	"context"
	"crypto/tls"
	"net"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/front"
)

// A module is what one feature adds to edge. A new feature writes a factory that returns one
// (its own file here), and appends it in build; nothing else in the server names it.
type module struct {
	name string
	// settings are its reload rules: each setting it reads, and whether a reload applies it.
	settings []setting
	// routes adds its routes for one config to next; nothing is in force until next is applied.
	routes func(cfg *config.Config, next *table) error
	// listeners are opened before any stage starts; those of a phase are served by one stage at
	// the start of it, and stopped together.
	listeners []*listener
	stages    []stage
	// status is what it shows on the status page; nil: nothing.
	status statusPart
}

// A setting is one config setting a module owns.
type setting struct {
	name string
	// reload: a reload applies a change; otherwise the running value stays until a restart and
	// the reload names the setting in a warning.
	reload bool
	// same tells whether two configs mean the same for this setting.
	same func(a, b *config.Config) bool
	// files are files outside the config file whose change starts a reload (a rotated Secret
	// reaches the pod as new files, with no config change); nil: none.
	files func(c *config.Config) []string
}

// table is one config's route table being built; nothing is in force until apply.
type table struct {
	routes  *front.Routes
	commits []func()
}

// onApply runs f when this table is put in force, before new requests see it: a module's parts
// that live outside the route table (the agent verifier, the certificate) change with it.
func (t *table) onApply(f func()) { t.commits = append(t.commits, f) }

// A phase orders the stages of every module: all stages of a phase start before the next
// phase's, and stop after them.
type phase uint8

const (
	// phaseOps is the ops listener: first up, last down, so /readyz tells the drain.
	phaseOps phase = iota
	// phaseParts is what traffic needs: the registry, tunnels, the authorizer, ACME.
	phaseParts
	// phaseTraffic is the traffic listeners, started and stopped together.
	phaseTraffic
	// phaseReady is readiness; stopping it begins the drain.
	phaseReady
	// phaseReload is the config watcher.
	phaseReload
	numPhases
)

// A stage is one part of the process that starts after the stages before it and stops before
// them, as GitLab kas's staged start does: listeners come up after the registry they announce
// into, and a drain stops announcing before it stops listening.
type stage struct {
	name  string
	phase phase
	// start starts it (nil: nothing to start). life is its lifetime: it ends when the stage
	// stops. What it runs in the background it starts on run, and its stop awaits that.
	start func(life context.Context, run *goroutines) error
	// stop stops it (nil: nothing to stop), after its lifetime ended and before its goroutines
	// are awaited; ctx ends with the drain's grace.
	stop func(ctx context.Context)
}

// A listener is one address a module serves.
type listener struct {
	setting string // names it in errors and logs: "listen.public"
	addr    string // "": not configured
	max     int    // > 0: at most this many connections at once
	phase   phase
	// tls, when set and returning a config, makes it a TLS listener; called when it starts.
	tls      func() *tls.Config
	serve    func(ln net.Listener, tls *tls.Config) error
	shutdown func(ctx context.Context)
	ln       net.Listener // open between openListeners and the stop of its stage
}
