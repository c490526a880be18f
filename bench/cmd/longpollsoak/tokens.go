package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"gitlab.com/edge/edge/bench"
)

// soakTokens are the tokens the clients send. The runner token and the personal access token
// are routable to cell 2 (c=2, o=1); the job token is opaque, so edge sends it to the legacy
// cell. They are handed to the clients on stdin, never on a command line.
type soakTokens struct {
	runner, pat, job string
}

func mintTokens() (soakTokens, error) {
	var t soakTokens
	for _, m := range []struct {
		dst    *string
		prefix string
	}{{&t.runner, "glrt-"}, {&t.pat, "glpat-"}} {
		var random [16]byte
		_, _ = rand.Read(random[:])
		tok, err := bench.MintRoutable(m.prefix, random, map[string]int64{"c": 2, "o": 1})
		if err != nil {
			return soakTokens{}, fmt.Errorf("mint %s token: %w", m.prefix, err)
		}
		*m.dst = tok
	}
	var random [20]byte
	_, _ = rand.Read(random[:])
	t.job = "longpollsoak-job-" + hex.EncodeToString(random[:])
	return t, nil
}
