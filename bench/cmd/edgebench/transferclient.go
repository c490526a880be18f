package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// transferClientCmd runs this program as the transfer case's client instead of the harness.
const transferClientCmd = "transfer-client"

// runTransferClient makes sequential transfers on one keep-alive connection and prints a
// bench.TransferLine for each measured one. The harness runs it as a child so that it can be
// pinned to the client CPU, as wrk is.
func runTransferClient(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(transferClientCmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "where to send the requests")
	method := fs.String("method", "GET", "GET: download (read the answer); POST: upload --bytes")
	size := fs.Int64("bytes", 0, "bytes of each transfer")
	count := fs.Int("count", 1, "measured transfers")
	warmup := fs.Int("warmup", 0, "unmeasured transfers first")
	headerFile := fs.String("header-file", "", "file of \"Name: value\" lines to send with each request")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" || *size < 0 || *count < 1 || *warmup < 0 || (*method != "GET" && *method != "POST") {
		fmt.Fprintln(stderr, "transfer-client: need --url, --method GET or POST, --bytes >= 0, --count >= 1")
		return 2
	}
	headers, err := readHeaderFile(*headerFile)
	if err != nil {
		fmt.Fprintln(stderr, "transfer-client:", err)
		return 2
	}
	t := &transferClient{
		client: &http.Client{Transport: &http.Transport{
			Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 1,
			WriteBufferSize: 64 << 10, ReadBufferSize: 64 << 10,
		}},
		url: *url, method: *method, size: *size, headers: headers,
		buf: make([]byte, 1<<20),
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for i := -*warmup; i < *count; i++ {
		s, err := t.once(context.Background())
		if err != nil {
			fmt.Fprintf(stderr, "transfer-client: %s %s: %v\n", *method, *url, err)
			return 1
		}
		if i >= 0 {
			fmt.Fprintln(w, bench.TransferLine(s))
		}
	}
	return 0
}

type transferClient struct {
	client      *http.Client
	url, method string
	size        int64
	headers     http.Header
	buf         []byte
}

// once makes one transfer: the time runs from sending the request to the answer's last byte.
// A download must bring size bytes, an upload must have reached the upstream whole.
func (t *transferClient) once(ctx context.Context) (bench.TransferSample, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var body io.Reader
	if t.method == "POST" {
		body = io.LimitReader(zeros{}, t.size)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, t.url, body)
	if err != nil {
		return bench.TransferSample{}, err
	}
	if body != nil {
		req.ContentLength = t.size
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	for k, vs := range t.headers {
		req.Header[k] = vs
	}
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return bench.TransferSample{}, err
	}
	defer resp.Body.Close()
	var n int64
	for {
		// Read straight into a large buffer: io.Copy to io.Discard would read 8 KiB at a time.
		m, err := resp.Body.Read(t.buf)
		n += int64(m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return bench.TransferSample{}, fmt.Errorf("read the answer: %w", err)
		}
	}
	elapsed := time.Since(start)
	switch {
	case resp.StatusCode != http.StatusOK:
		return bench.TransferSample{}, fmt.Errorf("answered %s", resp.Status)
	case t.method == "GET" && n != t.size:
		return bench.TransferSample{}, fmt.Errorf("downloaded %d bytes, want %d", n, t.size)
	case t.method == "POST" && resp.Header.Get("Bench-Body-Bytes") != strconv.FormatInt(t.size, 10):
		return bench.TransferSample{}, fmt.Errorf("the upstream got %q bytes, want %d", resp.Header.Get("Bench-Body-Bytes"), t.size)
	}
	return bench.TransferSample{Bytes: t.size, Elapsed: elapsed}, nil
}

// zeros is an endless upload body; clearing the buffer costs far less than the network does.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// readHeaderFile reads "Name: value" lines; no file, no headers.
func readHeaderFile(path string) (http.Header, error) {
	h := http.Header{}
	if path == "" {
		return h, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%s: a line is not \"Name: value\"", path)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h, nil
}
