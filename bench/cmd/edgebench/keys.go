package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"gitlab.com/edge/edge/bench"
)

// mintTokens makes the runner token (routable, cell 2) and the job JWT (RS256, cell 3), and
// writes the JWT's public key where edge's config points. The same tokens are sent on every
// request, as one runner or one job would, so edge's verified-token cache applies to case d.
func (h *harness) mintTokens() (caseTokens, string, error) {
	key, err := h.jwtKey()
	if err != nil {
		return caseTokens{}, "", err
	}
	pubPEM, err := bench.PublicKeyPEM(key)
	if err != nil {
		return caseTokens{}, "", err
	}
	pubFile := filepath.Join(h.dir, "gitlab-jwt.pub")
	if err := os.WriteFile(pubFile, pubPEM, 0o644); err != nil {
		return caseTokens{}, "", fmt.Errorf("write public key: %w", err)
	}
	var random [16]byte
	if _, err := rand.Read(random[:]); err != nil {
		return caseTokens{}, "", err
	}
	runner, err := bench.MintRoutable("glrt-t2_", random, map[string]int64{"c": 2, "o": 1})
	if err != nil {
		return caseTokens{}, "", err
	}
	job, err := bench.MintJobJWT(key, bench.JobJWT{
		Kid: jwtKid, Issuer: jwtIssuer, Audience: jwtAudience, Cell: 3, Organization: 1, JobID: 123, TTL: 24 * time.Hour,
	}, time.Now())
	if err != nil {
		return caseTokens{}, "", err
	}
	return caseTokens{runner: runner, jobJWT: job}, pubFile, nil
}

// jwtKey reads --jwt-key, else the repository's example key, else makes a fresh one: the key
// only has to match the public key edge is given, which the harness derives from it.
func (h *harness) jwtKey() (*rsa.PrivateKey, error) {
	path := h.opts.jwtKey
	if path == "" {
		path = filepath.Join(h.repo, "examples", "keys", "gitlab-jwt.key")
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && h.opts.jwtKey == "" {
		logf("%s not found: signing the job JWT with a fresh RSA key", path)
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		return nil, fmt.Errorf("jwt key: %w", err)
	}
	key, err := bench.ParseRSAPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("jwt key %s: %w", path, err)
	}
	return key, nil
}

func isEdgeModule(gomod []byte) bool {
	for _, line := range bytes.Split(gomod, []byte("\n")) {
		if string(bytes.TrimSpace(line)) == "module gitlab.com/edge/edge" {
			return true
		}
	}
	return false
}
