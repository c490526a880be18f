package main

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"gitlab.com/edge/edge/internal/cli"
	"gitlab.com/edge/edge/tokens"
)

const jobTokenPrefix = "glcbt-"

func cmdToken(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	const synopsis = "token mint routable|job|agent|gitlab-api [flags]  |  edge token decode TOKEN|-"
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprintf(stderr, "Usage: edge %s\n", synopsis)
		if len(args) == 0 {
			return usagef("token needs a subcommand: mint or decode")
		}
		return cli.ErrHelp
	}
	switch args[0] {
	case "decode":
		return cmdTokenDecode(args[1:], stdin, stdout, stderr)
	case "mint":
		const kinds = "routable, job, agent or gitlab-api"
		if len(args) < 2 || isHelp(args[1]) {
			fmt.Fprintf(stderr, "Usage: edge token mint routable|job|agent|gitlab-api [flags]\n\n"+
				"Run 'edge token mint KIND --help' for a kind's flags.\n")
			if len(args) < 2 {
				return usagef("token mint needs a kind: %s", kinds)
			}
			return cli.ErrHelp
		}
		switch args[1] {
		case "routable":
			return cmdMintRoutable(args[2:], stdout, stderr)
		case "job":
			return cmdMintJob(args[2:], stdout, stderr)
		case "agent":
			return cmdMintAgent(args[2:], stdout, stderr)
		case "gitlab-api":
			return cmdMintGitLabAPI(args[2:], stdout, stderr)
		}
		return usagef("token mint: unknown kind %q (want %s)", args[1], kinds)
	}
	return usagef("token: unknown subcommand %q (want mint or decode)", args[0])
}

// keyFlags are the routing keys shared by both mint commands.
type keyFlags struct{ cell, org, group, project, user, runnerType uint64 }

func (k *keyFlags) register(fsSet func(p *uint64, name string, value uint64, usage string)) {
	fsSet(&k.cell, "cell", 0, "cell id (c)")
	fsSet(&k.org, "org", 1, "organization id (o)")
	fsSet(&k.group, "group", 0, "group id (g)")
	fsSet(&k.project, "project", 0, "project id (p)")
	fsSet(&k.user, "user", 0, "user id (u)")
	fsSet(&k.runnerType, "runner-type", 0, "runner type (t): 1 instance, 2 group, 3 project")
}

func (k *keyFlags) keys() tokens.Keys {
	var out tokens.Keys
	for _, f := range []struct {
		bit tokens.KeySet
		v   uint64
	}{{tokens.KeyCell, k.cell}, {tokens.KeyOrganization, k.org}, {tokens.KeyGroup, k.group},
		{tokens.KeyProject, k.project}, {tokens.KeyUser, k.user}, {tokens.KeyRunnerType, k.runnerType}} {
		if f.v != 0 {
			out = out.Set(f.bit, f.v)
		}
	}
	return out
}

func cmdMintRoutable(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token mint routable", "token mint routable [--prefix glrt-] [--cell N] [--org N] ...", stderr)
	prefix := fs.String("prefix", "glrt-", "token prefix")
	var k keyFlags
	k.register(fs.Uint64Var)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var random [16]byte
	if _, err := rand.Read(random[:]); err != nil {
		return err
	}
	tok, err := tokens.MintRoutable(*prefix, random, k.keys())
	if err != nil {
		return usageError{Err: err}
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

func cmdMintJob(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token mint job", "token mint job --key FILE [--alg RS256] [--kid k1] [--cell N] [--job N] ...", stderr)
	keyFile := fs.String("key", "", "private key PEM file (RSA, EC or Ed25519), or an HMAC secret file for HS*")
	alg := fs.String("alg", "RS256", "signing algorithm")
	kid := fs.String("kid", "", "key id for the JWT header")
	issuer := fs.String("issuer", "https://gitlab.example.com", "iss claim")
	audience := fs.String("audience", "gitlab-authz-token", "aud claim")
	job := fs.Uint64("job", 1, "job id (sub gid://gitlab/Ci::Build/<id>)")
	ttl := fs.Duration("ttl", time.Hour, "lifetime (exp = now + ttl)")
	legacy := fs.Bool("legacy-claims", false, "write cell_id/organization_id instead of c/o")
	var k keyFlags
	k.register(fs.Uint64Var)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *keyFile == "" {
		return usagef("token mint job: --key is required")
	}
	key, err := readSigningKey(*keyFile, *alg)
	if err != nil {
		return usageError{Err: err}
	}
	now := time.Now()
	raw, err := tokens.MintJobJWT(tokens.MintJobOptions{
		Key: key, Algorithm: *alg, KID: *kid, Issuer: *issuer, Audience: *audience,
		Keys: k.keys(), LegacyCellID: *legacy, JobID: *job, IssuedAt: now, ExpiresAt: now.Add(*ttl),
	})
	if err != nil {
		return usageError{Err: err}
	}
	fmt.Fprintln(stdout, jobTokenPrefix+raw)
	return nil
}

func readSigningKey(file, alg string) (any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasPrefix(alg, "HS"):
		return []byte(strings.TrimSpace(string(data))), nil
	case strings.HasPrefix(alg, "RS"), strings.HasPrefix(alg, "PS"):
		return jwt.ParseRSAPrivateKeyFromPEM(data)
	case strings.HasPrefix(alg, "ES"):
		return jwt.ParseECPrivateKeyFromPEM(data)
	case alg == "EdDSA":
		return jwt.ParseEdPrivateKeyFromPEM(data)
	}
	return nil, fmt.Errorf("unsupported algorithm %q", alg)
}

func cmdTokenDecode(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("token decode", "token decode TOKEN|-   (- reads the token from standard input)", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("token decode takes one token (or - for standard input)")
	}
	raw := fs.Arg(0)
	if raw == "-" {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		raw = line
	}
	enc := json.NewEncoder(stdout)
	return enc.Encode(decodeToken(strings.TrimSpace(raw)))
}

// decoded is `edge token decode`'s answer (tokens.md section 5). It never holds the token.
type decoded struct {
	Kind     string            `json:"kind"`
	Routable bool              `json:"routable"`
	Prefix   string            `json:"prefix,omitempty"`
	Verified *bool             `json:"verified,omitempty"`
	Keys     map[string]uint64 `json:"keys,omitempty"`
	JobID    uint64            `json:"job_id,omitempty"`
	Reason   string            `json:"reason,omitempty"`
}

func decodeToken(raw string) decoded {
	if jwtPart, ok := tokens.JobJWT(raw); ok {
		unverified := false
		claims, err := tokens.ParseJobClaimsUnverified(jwtPart)
		if err != nil {
			return decoded{Kind: "job_jwt", Verified: &unverified, Reason: err.Error()}
		}
		return decoded{Kind: "job_jwt", Routable: true, Verified: &unverified,
			Keys: claims.Keys.Map(), JobID: claims.JobID}
	}
	r, err := tokens.ParseRoutable(raw)
	if err != nil {
		return decoded{Kind: "legacy", Reason: reasonText(err)}
	}
	return decoded{Kind: "routable", Routable: true, Prefix: r.Prefix, Keys: r.Keys.Map()}
}

func reasonText(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

func cmdMintAgent(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token mint agent", "token mint agent --key FILE --agent-id ID [--alg HS256] [--project ID] [--ttl 24h]", stderr)
	keyFile := fs.String("key", "", "private key PEM file, or an HMAC secret file for HS*")
	alg := fs.String("alg", "HS256", "signing algorithm")
	kid := fs.String("kid", "", "key id for the JWT header")
	issuer := fs.String("issuer", "", "iss claim (empty: none)")
	agentID := fs.String("agent-id", "", "agent_id claim")
	projectID := fs.String("project", "", "project_id claim (optional)")
	ttl := fs.Duration("ttl", 24*time.Hour, "lifetime (exp = now + ttl)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *keyFile == "" || *agentID == "" {
		return usagef("token mint agent: --key and --agent-id are required")
	}
	key, err := readSigningKey(*keyFile, *alg)
	if err != nil {
		return usageError{Err: err}
	}
	now := time.Now()
	tok, err := tokens.MintAgentToken(tokens.MintAgentOptions{Key: key, Algorithm: *alg, KID: *kid, Issuer: *issuer,
		Audience: tokens.DefaultAgentAudience, AgentID: *agentID, ProjectID: *projectID, IssuedAt: now, ExpiresAt: now.Add(*ttl)})
	if err != nil {
		return usageError{Err: err}
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

func cmdMintGitLabAPI(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token mint gitlab-api", "token mint gitlab-api --secret-file FILE [--ttl 5m]", stderr)
	secretFile := fs.String("secret-file", "", "the gitlab_api.secret_file of the edge")
	issuer := fs.String("issuer", tokens.DefaultGitLabAPIIssuer, "iss claim")
	audience := fs.String("audience", tokens.DefaultGitLabAPIAudience, "aud claim")
	ttl := fs.Duration("ttl", 5*time.Minute, "lifetime")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *secretFile == "" {
		return usagef("token mint gitlab-api: --secret-file is required")
	}
	secret, err := readSigningKey(*secretFile, "HS256")
	if err != nil {
		return usageError{Err: err}
	}
	tok, err := tokens.MintGitLabAPIToken(secret.([]byte), *issuer, *audience, time.Now(), *ttl)
	if err != nil {
		return usageError{Err: err}
	}
	fmt.Fprintln(stdout, tok)
	return nil
}
