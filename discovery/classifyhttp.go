package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const maxClassifyAnswer = 64 << 10

type classifyResponse struct {
	Action string `json:"action"`
	Proxy  *struct {
		Address string `json:"address"`
	} `json:"proxy"`
}

// ask makes one upstream call and returns the answer with how long it may be cached.
func (c *Classifier) ask(ctx context.Context, typ ClassifyType, value uint64) (answer, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(classifyBody(typ, value)))
	if err != nil {
		return answer{}, 0, fmt.Errorf("%w: %w", ErrClassify, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return answer{}, 0, fmt.Errorf("%w: %w", ErrClassify, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxClassifyAnswer+1))
	if err != nil {
		return answer{}, 0, fmt.Errorf("%w: reading answer: %w", ErrClassify, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return answer{}, maxAge(resp.Header), nil
	default:
		return answer{}, 0, fmt.Errorf("%w: status %d", ErrClassify, resp.StatusCode)
	}
	if len(body) > maxClassifyAnswer {
		return answer{}, 0, fmt.Errorf("%w: answer larger than %d bytes", ErrClassify, maxClassifyAnswer)
	}
	var r classifyResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return answer{}, 0, fmt.Errorf("%w: malformed answer: %w", ErrClassify, err)
	}
	// grpc-gateway writes the Topology Service's enum as "PROXY"; the spec writes "proxy".
	if !strings.EqualFold(r.Action, "proxy") {
		return answer{}, maxAge(resp.Header), nil
	}
	if r.Proxy == nil || r.Proxy.Address == "" {
		return answer{}, 0, fmt.Errorf("%w: proxy answer without an address", ErrClassify)
	}
	return answer{address: r.Proxy.Address, found: true}, maxAge(resp.Header), nil
}

// classifyBody is {"type":"PROJECT_ID","value":"1234"}; typ is one of the known constants, so
// it needs no escaping.
func classifyBody(typ ClassifyType, value uint64) []byte {
	b := make([]byte, 0, 64)
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","value":"`...)
	b = strconv.AppendUint(b, value, 10)
	return append(b, `"}`...)
}

// maxAge is how long an answer may be cached: its Cache-Control max-age, or 0 when there is none
// or no-store or no-cache forbids caching.
func maxAge(h http.Header) time.Duration {
	var age time.Duration
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			d = strings.TrimSpace(d)
			name, arg, _ := strings.Cut(d, "=")
			switch {
			case strings.EqualFold(name, "no-store"), strings.EqualFold(name, "no-cache"):
				return 0
			case strings.EqualFold(name, "max-age"):
				n, err := strconv.ParseInt(strings.Trim(arg, `"`), 10, 64)
				if err != nil || n <= 0 {
					return 0
				}
				age = time.Duration(min(n, math.MaxInt64/int64(time.Second))) * time.Second
			}
		}
	}
	return age
}
