package workspaceauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// defaultStaticPoll is how often Run looks at the file when given no interval.
const defaultStaticPoll = 2 * time.Second

// SSHTarget is how edge reaches a workspace's sshd through its agent: the port, the user to log in
// as, and the host key to expect (workspaces.md, SSH).
type SSHTarget struct {
	Port    int
	User    string
	HostKey string
}

// Static is the authorizer read from a YAML file (workspaces.md, Authorization and SSH). It is also
// a Directory: it knows which workspaces exist without a user. Run re-reads the file when its
// content changes; lookups always see one whole table, the old one or the new one.
type Static struct {
	path  string
	log   *slog.Logger
	table atomic.Pointer[staticTable]

	mu      sync.Mutex // serialises reads of the file; guards the fields below
	seen    [sha256.Size]byte
	readErr string // the last read error logged, so a missing file is logged once, not every poll
}

type staticTable struct {
	workspaces map[string]staticEntry
	tokens     map[string]string // token SHA-256, lower-case hex -> user name
}

type staticEntry struct {
	agentID string
	users   []string
	ssh     *SSHTarget
}

// NewStatic reads and checks the file at path. A file that does not parse, or breaks a rule, is an
// error that names the line.
func NewStatic(path string, log *slog.Logger) (*Static, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Static{path: path, log: log}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// Authorize allows the users listed for the workspace, by username or by ID, on every port. An
// unknown workspace is ErrNotFound; a known one with the user not listed is a denial.
func (s *Static) Authorize(_ context.Context, user User, workspace string, _ int) (Decision, error) {
	e, ok := s.table.Load().workspaces[workspace]
	if !ok {
		return Decision{}, fmt.Errorf("%w: %q", ErrNotFound, workspace)
	}
	if !slices.ContainsFunc(e.users, func(u string) bool { return u == user.Username || u == user.ID }) {
		return Decision{}, nil
	}
	return Decision{Allowed: true, AgentID: e.agentID, WorkspaceID: workspace}, nil
}

// Lookup says whether the workspace exists and which agent serves it.
func (s *Static) Lookup(workspace string) (agentID string, ok bool) {
	e, ok := s.table.Load().workspaces[workspace]
	return e.agentID, ok
}

// SSH is the workspace's ssh entry; false when the workspace is unknown or has none.
func (s *Static) SSH(workspace string) (SSHTarget, bool) {
	e, ok := s.table.Load().workspaces[workspace]
	if !ok || e.ssh == nil {
		return SSHTarget{}, false
	}
	return *e.ssh, true
}

// UserForToken is the name of the user whose personal access token has this SHA-256 (hex, either
// case).
func (s *Static) UserForToken(sha256hex string) (name string, ok bool) {
	name, ok = s.table.Load().tokens[toLowerASCII(sha256hex)]
	return name, ok
}

// Run looks at the file every poll (2 s when poll <= 0) until ctx is done, and takes in its content
// when it changed. Changes are found by content, not by time or inode, so both writes in place and
// replacements by rename (as Kubernetes does with a ConfigMap volume) are seen. A file that does
// not parse or check is logged and the table in use stays.
func (s *Static) Run(ctx context.Context, poll time.Duration) {
	if poll <= 0 {
		poll = defaultStaticPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.poll()
		}
	}
}

// Reload reads the file now, whether or not it changed. On an error the table in use stays.
func (s *Static) Reload() error {
	return s.load()
}

func (s *Static) poll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := os.ReadFile(s.path)
	if err != nil {
		if msg := err.Error(); msg != s.readErr {
			s.readErr = msg
			s.log.Error("static authorizer: cannot read the file, keeping the table in use", "path", s.path, "err", err)
		}
		return
	}
	s.readErr = ""
	if sha256.Sum256(data) == s.seen {
		return
	}
	if err := s.apply(data); err != nil {
		s.log.Error("static authorizer: bad file, keeping the table in use", "path", s.path, "err", err)
	}
}

// load reads the file and applies it whatever its content.
func (s *Static) load() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := os.ReadFile(s.path)
	if err != nil {
		return fmt.Errorf("static authorizer: %w", err)
	}
	s.readErr = ""
	return s.apply(data)
}

// apply parses data and swaps the table in; either way data counts as seen, so a bad file is
// logged once, not at every poll. Called with mu held.
func (s *Static) apply(data []byte) error {
	sum := sha256.Sum256(data)
	s.seen = sum
	t, err := parseStatic(data)
	if err != nil {
		return fmt.Errorf("static authorizer %s: %w", s.path, err)
	}
	first := s.table.Swap(t) == nil
	msg := "static authorizer: file reloaded"
	if first {
		msg = "static authorizer: file loaded"
	}
	s.log.Info(msg, "path", s.path, "workspaces", len(t.workspaces), "users", len(t.tokens),
		"sha256", hex.EncodeToString(sum[:6]))
	return nil
}

func toLowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
