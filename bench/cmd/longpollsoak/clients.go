package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"gitlab.com/edge/edge/bench"
)

// startClients starts the client processes, each with its share of the polls and of the
// other traffic.
func (s *soak) startClients(t soakTokens, start, otherEnd, deadline time.Time) ([]*bench.Proc, error) {
	n := s.plan.Clients
	idPrefix := strconv.FormatInt(time.Now().UnixNano(), 36)
	var procs []*bench.Proc
	first := 0
	for i := range n {
		polls := s.plan.Polls / n
		if i < s.plan.Polls%n {
			polls++
		}
		job := clientJob{
			Edge: s.public, RunnerTok: t.runner, PATTok: t.pat, JobTok: t.job,
			IDPrefix: idPrefix, FirstPoll: first, Polls: polls,
			PollRate: pollRate / float64(n),
			RPS:      s.o.rps / float64(n),
			Conns:    max(1, otherConns/n),
			Start:    start, OtherEnd: otherEnd, Deadline: deadline,
		}
		first += polls
		stdin, err := json.Marshal(job)
		if err != nil {
			return nil, fmt.Errorf("encode client job: %w", err)
		}
		p, err := s.sup.Start(fmt.Sprintf("client%d", i), []string{s.self, clientCommand}, bench.StartOptions{Stdin: stdin, Stdout: true})
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// waitClients waits for every client to finish (each gives up at its deadline), kills those
// still running at limit, and adds up their results.
func (s *soak) waitClients(ctx context.Context, procs []*bench.Proc, limit time.Time) (clientResult, error) {
	var total clientResult
	for _, p := range procs {
		timer := time.NewTimer(time.Until(limit))
		select {
		case <-p.Done():
		case <-ctx.Done():
			timer.Stop()
			return clientResult{}, ctx.Err()
		case <-timer.C:
			_ = p.Signal(syscall.SIGKILL)
			<-p.Done()
		}
		timer.Stop()
		if p.Err() != nil {
			return clientResult{}, p.Failure()
		}
		b, err := os.ReadFile(p.Out)
		if err != nil {
			return clientResult{}, fmt.Errorf("%s's result: %w", p.Name, err)
		}
		var r clientResult
		if err := json.Unmarshal(b, &r); err != nil {
			return clientResult{}, fmt.Errorf("%s's result: %w", p.Name, err)
		}
		total.Polls.merge(r.Polls)
		total.Other.merge(r.Other)
		total.Finished = maxTime(total.Finished, r.Finished)
	}
	return total, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
