package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// clientCommand is the hidden subcommand of a client process: its share of the long polls and
// of the other traffic. Its job comes on stdin (the tokens stay off command lines) and its
// result goes to stdout as JSON.
const clientCommand = "_client"

type clientJob struct {
	Edge      string    `json:"edge"`       // host:port of edge's public listener
	RunnerTok string    `json:"runner_tok"` // glrt- routable to cell 2
	PATTok    string    `json:"pat_tok"`    // glpat- routable to cell 2
	JobTok    string    `json:"job_tok"`    // opaque: goes to the legacy cell
	IDPrefix  string    `json:"id_prefix"`  // poll ids are IDPrefix-<n>
	FirstPoll int       `json:"first_poll"` // this client's polls are FirstPoll..FirstPoll+Polls-1
	Polls     int       `json:"polls"`
	PollRate  float64   `json:"poll_rate"` // new polls per second while opening them
	RPS       float64   `json:"rps"`       // other traffic
	Conns     int       `json:"conns"`     // keep-alive connections of the other traffic
	Start     time.Time `json:"start"`     // when the soak starts
	OtherEnd  time.Time `json:"other_end"` // when the other traffic stops
	Deadline  time.Time `json:"deadline"`  // polls not answered by then are errors
}

type clientResult struct {
	Polls    pollTally  `json:"polls"`
	Other    otherTally `json:"other"`
	Finished time.Time  `json:"finished"` // when the last poll was answered
}

func runClient(stdin io.Reader, stdout io.Writer) error {
	var job clientJob
	if err := json.NewDecoder(stdin).Decode(&job); err != nil {
		return fmt.Errorf("read the job from stdin: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithDeadline(ctx, job.Deadline)
	defer cancel()

	var res clientResult
	var wg sync.WaitGroup
	wg.Go(func() { res.Other = runOther(ctx, job) })
	res.Polls = runPolls(ctx, job)
	res.Finished = time.Now()
	wg.Wait()
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return fmt.Errorf("write the result: %w", err)
	}
	return nil
}

// waitUntil sleeps until t or the end of ctx.
func waitUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
