package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code int
		out  string
	}{
		{nil, 0, ""},
		{ErrHelp, 0, ""},
		{fmt.Errorf("serve: %w", ErrHelp), 0, ""},
		{Usagef("bad flag %q", "-x"), 2, "edge: bad flag \"-x\"\n"},
		{fmt.Errorf("config: %w", UsageError{errors.New("2 problems")}), 2, "edge: config: 2 problems\n"},
		{errors.New("listen: address in use"), 1, "edge: listen: address in use\n"},
	} {
		var stderr bytes.Buffer
		if code := ExitCode("edge", tt.err, &stderr); code != tt.code || stderr.String() != tt.out {
			t.Errorf("%v: exit %d, printed %q; want %d, %q", tt.err, code, stderr.String(), tt.code, tt.out)
		}
	}
}

func TestParseFlags(t *testing.T) {
	var stderr bytes.Buffer
	fs := NewFlagSet("edge", "check", "check --config F", &stderr)
	fs.String("config", "", "the config")
	if err := ParseFlags(fs, []string{"--help"}); !errors.Is(err, ErrHelp) || !bytes.Contains(stderr.Bytes(), []byte("Usage: edge check --config F")) {
		t.Errorf("--help: %v, printed %q", err, stderr.String())
	}
	var usage UsageError
	if err := ParseFlags(fs, []string{"--nope"}); !errors.As(err, &usage) {
		t.Errorf("unknown flag: %v, want a UsageError", err)
	}
	if err := ParseFlags(fs, []string{"--config", "x.yaml"}); err != nil {
		t.Errorf("good flags: %v", err)
	}
}
