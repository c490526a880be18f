package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"time"
)

// AgentFile is the config of `edge agent --config agent.yaml`, decoded as strictly as the edge's.
type AgentFile struct {
	File               string    `yaml:"-"`
	Edge               string    `yaml:"edge"`       // base URL of the edge
	TokenFile          string    `yaml:"token_file"` // made absolute; read at every connect
	AllowPorts         []int     `yaml:"allow_ports"`
	MapPorts           []PortMap `yaml:"map_ports"`
	Connections        int       `yaml:"connections"`
	MaxAge             Duration  `yaml:"max_age"`
	CAFile             string    `yaml:"ca_file"`
	CA                 []byte    `yaml:"-"`
	InsecureSkipVerify bool      `yaml:"insecure_skip_verify"`
	Ops                string    `yaml:"ops"`
	Log                Log       `yaml:"log"`
	Tracing            *Tracing  `yaml:"tracing"` // the agent's spans of its calls to upstreams; nil: none

	Upstreams map[int]string `yaml:"-"` // from AllowPorts and MapPorts, by Validate
}

// PortMap serves an agent port from another address than 127.0.0.1.
type PortMap struct {
	Port    int    `yaml:"port"`
	Address string `yaml:"address"` // host:port
}

// LoadAgent reads an agent config file; a bad one gives Problems.
func LoadAgent(path string) (*AgentFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read agent config: %w", err)
	}
	ch := newChecker(path, nil)
	a := &AgentFile{File: path, Connections: 1, Log: Log{Level: "info", Format: "json"}}
	if root := parseDocument(data, ch); root != nil {
		(&decoder{ch: ch}).decode(root, reflect.ValueOf(a).Elem(), "")
	} else if len(ch.problems) > 0 {
		return nil, ch.err()
	}
	abs, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	if _, named := ch.lines["tracing.service_name"]; a.Tracing != nil && !named {
		a.Tracing.ServiceName = "edge-agent"
	}
	f := &files{baseDir: abs, ch: ch}
	f.resolve(&a.TokenFile)
	a.CA = f.read("ca_file", &a.CAFile)
	a.validate(ch)
	if err := ch.err(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *AgentFile) validate(ch *checker) {
	if u, err := url.Parse(a.Edge); a.Edge == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ch.addNear("edge", "", "must be the edge's base URL, http(s)://host[:port]")
	}
	if a.TokenFile == "" {
		ch.addNear("token_file", "", "is required")
	}
	if a.Connections < 1 {
		ch.add("connections", "must be at least 1")
	}
	if a.Log.Access != nil {
		ch.add("log.access", "is an edge setting: an agent writes no access log")
	}
	a.Upstreams = map[int]string{}
	for i, p := range a.AllowPorts {
		if p < 1 || p > 65535 {
			ch.add(index("allow_ports", i), "%d is not a port", p)
			continue
		}
		a.Upstreams[p] = "127.0.0.1:" + strconv.Itoa(p)
	}
	for i, m := range a.MapPorts {
		if m.Port < 1 || m.Port > 65535 {
			ch.add(index("map_ports", i)+".port", "%d is not a port", m.Port)
			continue
		}
		if _, _, err := net.SplitHostPort(m.Address); err != nil {
			ch.add(index("map_ports", i)+".address", "%q is not host:port", m.Address)
			continue
		}
		a.Upstreams[m.Port] = m.Address
	}
	if len(a.Upstreams) == 0 {
		ch.addNear("allow_ports", "", "at least one port in allow_ports or map_ports is required")
	}
	if a.Tracing != nil {
		a.Tracing.validate(ch)
	}
	if a.MaxAge.Duration < 0 || (a.MaxAge.Duration > 0 && a.MaxAge.Duration < time.Minute) {
		ch.add("max_age", "must be 0 (never) or at least 1m")
	}
}
