package workspaceauth

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

type staticFile struct {
	Workspaces []staticWorkspace `yaml:"workspaces"`
	Users      []staticUser      `yaml:"users"`
}

type staticWorkspace struct {
	Name    string     `yaml:"name"`
	AgentID string     `yaml:"agent_id"`
	Users   []string   `yaml:"users"`
	SSH     *staticSSH `yaml:"ssh"`
}

type staticSSH struct {
	Port    int    `yaml:"port"`
	User    string `yaml:"user"`
	HostKey string `yaml:"host_key"`
}

type staticUser struct {
	Name        string `yaml:"name"`
	TokenSHA256 string `yaml:"token_sha256"`
}

// parseStatic decodes the file strictly (an unknown key is an error) and checks every entry; all
// the problems found are reported, each with its line.
func parseStatic(data []byte) (*staticTable, error) {
	var f staticFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			// Most likely a file caught while being written in place: not "nobody may use anything".
			return nil, errors.New("empty file")
		}
		return nil, err
	}
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	wsLines, userLines := entryLines(data)

	var errs []error
	bad := func(line int, entry, format string, args ...any) {
		errs = append(errs, fmt.Errorf("line %d: %s: %s", line, entry, fmt.Sprintf(format, args...)))
	}
	t := &staticTable{workspaces: make(map[string]staticEntry, len(f.Workspaces)), tokens: make(map[string]string, len(f.Users))}
	for i, w := range f.Workspaces {
		line, entry := lineAt(wsLines, i), fmt.Sprintf("workspaces[%d]", i)
		if w.Name != "" {
			entry += " (" + w.Name + ")"
		}
		switch {
		case !IsLabel(w.Name):
			bad(line, entry, "name %q is not a DNS label (a-z, 0-9, '-', 1 to 63 characters, no '-' first or last)", w.Name)
		default:
			if _, dup := t.workspaces[w.Name]; dup {
				bad(line, entry, "name %q is used twice", w.Name)
			}
		}
		if !isAgentID(w.AgentID) {
			bad(line, entry, "agent_id %q: want 1 to 64 of A-Z, a-z, 0-9, '.', '_', '-'", w.AgentID)
		}
		for _, u := range w.Users {
			if u == "" {
				bad(line, entry, "users: an empty name")
			}
		}
		e := staticEntry{agentID: w.AgentID, users: w.Users}
		if w.SSH != nil {
			for _, p := range checkSSH(*w.SSH) {
				bad(line, entry, "ssh: %s", p)
			}
			e.ssh = &SSHTarget{Port: w.SSH.Port, User: w.SSH.User, HostKey: w.SSH.HostKey}
		}
		if _, dup := t.workspaces[w.Name]; !dup {
			t.workspaces[w.Name] = e
		}
	}
	names := make(map[string]bool, len(f.Users))
	for i, u := range f.Users {
		line, entry := lineAt(userLines, i), fmt.Sprintf("users[%d]", i)
		switch {
		case u.Name == "":
			bad(line, entry, "name: required")
		case names[u.Name]:
			bad(line, entry, "name %q is used twice", u.Name)
		}
		names[u.Name] = true
		sum := toLowerASCII(u.TokenSHA256)
		switch {
		case !isHex64(sum):
			// The value is not quoted back: it may be a token pasted by mistake.
			bad(line, entry, "token_sha256: want 64 hexadecimal characters, the SHA-256 of the token")
		default:
			if _, dup := t.tokens[sum]; dup {
				bad(line, entry, "token_sha256 is the same as another user's")
			}
			t.tokens[sum] = u.Name
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

func checkSSH(s staticSSH) []string {
	var problems []string
	if s.Port < 1 || s.Port > 65535 {
		problems = append(problems, fmt.Sprintf("port %d: want 1 to 65535", s.Port))
	}
	if s.User == "" || strings.ContainsFunc(s.User, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		problems = append(problems, fmt.Sprintf("user %q: want a user name, without spaces", s.User))
	}
	// An authorized_keys style line: "<type> <base64> [comment]".
	f := strings.Fields(s.HostKey)
	if len(f) < 2 || len(f) > 3 {
		problems = append(problems, "host_key: want \"<type> <base64 key>\", like \"ssh-ed25519 AAAA...\"")
	} else if k, err := base64.StdEncoding.DecodeString(f[1]); err != nil || len(k) == 0 {
		problems = append(problems, "host_key: the key is not base64")
	}
	return problems
}

// entryLines finds the line of each entry of the workspaces and users lists, for error messages.
func entryLines(data []byte) (workspaces, users []int) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	m := doc.Content[0].Content
	for i := 0; i+1 < len(m); i += 2 {
		var lines []int
		for _, n := range m[i+1].Content {
			lines = append(lines, n.Line)
		}
		switch m[i].Value {
		case "workspaces":
			workspaces = lines
		case "users":
			users = lines
		}
	}
	return workspaces, users
}

func lineAt(lines []int, i int) int {
	if i < len(lines) {
		return lines[i]
	}
	return 0
}

func isAgentID(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
