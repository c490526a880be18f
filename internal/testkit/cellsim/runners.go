package cellsim

import (
	"crypto/rand"
	"fmt"
	"net/http"

	"gitlab.com/edge/edge/tokens"
)

// maxJSONBody bounds what the cell reads of a runner API JSON body; a larger one is drained
// and answered 413 like Workhorse does for job requests.
const maxJSONBody = 32 << 10

// runnerCall reads the body and authenticates the runner-scoped token. A zero response means
// authorized; fields holds the parsed body.
func (c *Cell) runnerCall(ex *exchange) (bodyFields, response) {
	b, tooBig, err := ex.readBody(maxJSONBody)
	if err != nil {
		return bodyFields{}, ex.failedRead()
	}
	if tooBig {
		ex.takeToken(bodyFields{})
		return bodyFields{}, messageResponse(http.StatusRequestEntityTooLarge)
	}
	f, ok := parseBody(ex.r.Header.Get("Content-Type"), b)
	if !ok {
		ex.takeToken(bodyFields{})
		return bodyFields{}, messageResponse(http.StatusBadRequest)
	}
	token := ex.takeToken(f)
	if token == "" {
		c.judgeRunner(ex, token)
		return f, jsonResponse(http.StatusBadRequest, map[string]string{"error": "token is missing"})
	}
	if !c.judgeRunner(ex, token) {
		return f, messageResponse(http.StatusForbidden)
	}
	return f, response{}
}

// register is POST /runners: the token is a registration (or runner authentication) token;
// the answer carries a new runner authentication token that names this cell.
func (c *Cell) register(ex *exchange) response {
	if _, res := c.runnerCall(ex); res.status != 0 {
		return res
	}
	token, err := c.mintRunnerToken()
	if err != nil {
		return messageResponse(http.StatusInternalServerError)
	}
	c.mu.Lock()
	id := c.nextRunnerID
	c.nextRunnerID++
	c.issued[token] = true
	c.mu.Unlock()
	return jsonResponse(http.StatusCreated, map[string]any{"id": id, "token": token, "token_expires_at": nil})
}

// verify is POST /runners/verify: 200 with the runner's details.
func (c *Cell) verify(ex *exchange) response {
	if _, res := c.runnerCall(ex); res.status != 0 {
		return res
	}
	return jsonResponse(http.StatusOK, map[string]any{"id": 1, "token": ex.rec.Token, "token_expires_at": nil})
}

// unregister is DELETE /runners and DELETE /runners/managers: 204.
func (c *Cell) unregister(ex *exchange) response {
	if _, res := c.runnerCall(ex); res.status != 0 {
		return res
	}
	return emptyResponse(http.StatusNoContent)
}

// resetToken is POST /runners/reset_authentication_token: 201 with a new token.
func (c *Cell) resetToken(ex *exchange) response {
	if _, res := c.runnerCall(ex); res.status != 0 {
		return res
	}
	token, err := c.mintRunnerToken()
	if err != nil {
		return messageResponse(http.StatusInternalServerError)
	}
	c.AcceptToken(token)
	return jsonResponse(http.StatusCreated, map[string]any{"token": token, "token_expires_at": nil})
}

// discovery is GET /runners/router/discovery: 200 {"server_url": ...}.
func (c *Cell) discovery(ex *exchange) response {
	if _, res := c.runnerCall(ex); res.status != 0 {
		return res
	}
	return jsonResponse(http.StatusOK, map[string]string{"server_url": c.opts.RouterURL})
}

// notFound answers paths the cell does not serve, like GitLab's API does.
func (c *Cell) notFound(ex *exchange) response {
	c.judgeRunner(ex, ex.takeToken(bodyFields{}))
	return messageResponse(http.StatusNotFound)
}

// mintRunnerToken issues an instance runner token (glrt-t1_) naming this cell.
func (c *Cell) mintRunnerToken() (string, error) {
	var random [16]byte
	if _, err := rand.Read(random[:]); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	keys := tokens.Keys{}.Set(tokens.KeyCell, c.opts.CellID).Set(tokens.KeyOrganization, 1).Set(tokens.KeyRunnerType, 1)
	return tokens.MintRoutable("glrt-t1_", random, keys)
}
