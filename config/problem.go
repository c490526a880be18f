package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Problem is one thing wrong with a config, and where it is.
type Problem struct {
	File    string // the config file as given to Load or Parse
	Path    string // like "cells[1].url" or "tokens.job_jwt.keys[0].file"; empty for the file as a whole
	Line    int    // 1-based; 0 when the problem has no place in the file
	Message string
}

// String formats the problem as "edge.yaml:12: cells[1].url: must be an absolute http(s) URL".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(cmp.Or(p.File, "config"))
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems is every problem found in a config, sorted by line. It is the error Load, Parse and
// Validate return for a bad config.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// checker collects problems, knows the line of every decoded path, and keeps one problem per path
// so a value that failed to decode is not reported again by validation.
type checker struct {
	file     string
	lines    map[string]int
	seen     map[string]bool
	problems Problems
}

func newChecker(file string, lines map[string]int) *checker {
	if lines == nil {
		lines = map[string]int{}
	}
	return &checker{file: file, lines: lines, seen: map[string]bool{}}
}

func (c *checker) at(path string, line int, format string, args ...any) {
	if path != "" {
		if c.seen[path] {
			return
		}
		c.seen[path] = true
	}
	c.problems = append(c.problems, Problem{File: c.file, Path: path, Line: line, Message: fmt.Sprintf(format, args...)})
}

// add reports a problem at path, on the line of path or of its nearest decoded parent.
func (c *checker) add(path, format string, args ...any) {
	c.at(path, c.line(path), format, args...)
}

// addNear is add for a path that may be absent from the file: the line of fallback is used then.
func (c *checker) addNear(path, fallback, format string, args ...any) {
	line := c.line(path)
	if line == 0 {
		line = c.line(fallback)
	}
	c.at(path, line, format, args...)
}

func (c *checker) line(path string) int {
	for path != "" {
		if l, ok := c.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

func (c *checker) err() error {
	if len(c.problems) == 0 {
		return nil
	}
	ps := slices.Clone(c.problems)
	slices.SortStableFunc(ps, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
	return ps
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
