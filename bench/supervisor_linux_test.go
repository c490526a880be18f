package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// gone reports whether pid no longer runs (absent, or a zombie not yet reaped by its new parent).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

func waitDone(t *testing.T, p *Proc) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not exit", p.Name)
	}
}

func TestSupervisorStopAll(t *testing.T) {
	s := &Supervisor{Dir: t.TempDir(), Name: "test"}
	defer s.StopAll()
	sleeper, err := s.Start("sleep", []string{"sleep", "30"}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A group whose leader has a child of its own: both must go.
	group, err := s.Start("group", []string{"sh", "-c", "sleep 30 & echo $!; sleep 30"}, StartOptions{Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	poll.UntilState(t, 5*time.Second, "the child pid in "+group.Out, func() (bool, string) {
		b, _ := os.ReadFile(group.Out)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return child != 0, strconv.Quote(string(b))
	})
	if got := strings.Join(s.Names(), ","); got != "sleep,group" {
		t.Errorf("Names: %s", got)
	}
	if sleeper.Exited() || group.Exited() {
		t.Fatal("exited before StopAll")
	}

	start := time.Now()
	s.StopAll()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("StopAll took %s", d)
	}
	if !sleeper.Exited() || !group.Exited() {
		t.Error("StopAll returned before the processes exited")
	}
	poll.Until(t, 3*time.Second, fmt.Sprintf("the group's child %d to be gone", child), func() bool { return gone(child) })
	if err := syscall.Kill(-sleeper.PID(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("sleep's group: %v", err)
	}
	if n := len(s.Names()); n != 0 {
		t.Errorf("%d names after StopAll", n)
	}
}

func TestSupervisorKillsWhatIgnoresSIGTERM(t *testing.T) {
	s := &Supervisor{Dir: t.TempDir(), Name: "test"}
	defer s.StopAll()
	// sleep inherits the ignored SIGTERM.
	p, err := s.Start("stubborn", []string{"sh", "-c", `trap "" TERM; sleep 30`}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the trap be set
	start := time.Now()
	s.StopAll()
	if d := time.Since(start); d < stopGrace || d > stopGrace+3*time.Second {
		t.Errorf("StopAll took %s, want about %s", d, stopGrace)
	}
	if !p.Exited() {
		t.Error("still running")
	}
}

func TestSupervisorFailure(t *testing.T) {
	s := &Supervisor{Dir: t.TempDir()}
	defer s.StopAll()
	p, err := s.Start("fails", []string{"sh", "-c", "echo starting; echo 'bad config: no listener' >&2; exit 3"}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	if p.Err() == nil {
		t.Fatal("Err: nil for exit 3")
	}
	msg := p.Failure().Error()
	for _, want := range []string{"fails exited", "exit status 3", "starting", "bad config: no listener", "end of its output"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Failure() = %q, want %q in it", msg, want)
		}
	}

	// With a separate stdout, the log is stderr only.
	p, err = s.Start("fails2", []string{"sh", "-c", "echo starting; echo oops >&2; exit 1"}, StartOptions{Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	msg = p.Failure().Error()
	if !strings.Contains(msg, "oops") || strings.Contains(msg, "starting") || !strings.Contains(msg, "end of its stderr") {
		t.Errorf("Failure() = %q", msg)
	}

	// Only the end of a long log.
	p, err = s.Start("long", []string{"sh", "-c", "i=0; while [ $i -lt 500 ]; do echo line$i; i=$((i+1)); done; exit 1"}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	msg = p.Failure().Error()
	if !strings.Contains(msg, "line499") || strings.Contains(msg, "line0\n") || len(msg) > 2200 {
		t.Errorf("Failure() of a long log: %d bytes, %q...", len(msg), msg[:min(len(msg), 200)])
	}
}

func TestSupervisorStdinStdout(t *testing.T) {
	s := &Supervisor{Dir: t.TempDir()}
	defer s.StopAll()
	p, err := s.Start("cat", []string{"cat"}, StartOptions{Stdin: []byte("hello\nworld\n"), Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	if p.Err() != nil {
		t.Fatal(p.Failure())
	}
	if b, err := os.ReadFile(p.Out); err != nil || string(b) != "hello\nworld\n" {
		t.Errorf("%s: %q, %v", p.Out, b, err)
	}
	if b, err := os.ReadFile(p.Log); err != nil || len(b) != 0 {
		t.Errorf("%s: %q, %v", p.Log, b, err)
	}
}

func TestSupervisorEnv(t *testing.T) {
	s := &Supervisor{Dir: t.TempDir()}
	defer s.StopAll()
	t.Setenv("BENCH_SUPERVISOR_INHERITED", "kept")
	p, err := s.Start("env", []string{"env"}, StartOptions{Env: []string{"BENCH_SUPERVISOR_ADDED=1"}})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	b, err := os.ReadFile(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"BENCH_SUPERVISOR_ADDED=1\n", "BENCH_SUPERVISOR_INHERITED=kept\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("env output lacks %q", want)
		}
	}
}

func TestSupervisorStartError(t *testing.T) {
	s := &Supervisor{Dir: t.TempDir()}
	defer s.StopAll()
	if _, err := s.Start("missing", []string{"/nonexistent/bench-supervisor-test"}, StartOptions{}); err == nil {
		t.Error("started a missing program")
	}
	if n := len(s.Names()); n != 0 {
		t.Errorf("%d names after a failed start", n)
	}
}

func TestWaitReady(t *testing.T) {
	s := &Supervisor{Dir: t.TempDir()}
	defer s.StopAll()
	p, err := s.Start("sleeper", []string{"sleep", "30"}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	if err := p.WaitReady(context.Background(), 10*time.Second, func() (bool, error) {
		calls++
		return calls == 3, nil
	}); err != nil || calls != 3 {
		t.Errorf("ready on the third check: %v after %d checks", err, calls)
	}
	err = p.WaitReady(context.Background(), 200*time.Millisecond, func() (bool, error) { return false, nil })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "sleeper not ready") {
		t.Errorf("never ready: %v, want sleeper not ready and a deadline", err)
	}

	dies, err := s.Start("dies", []string{"sh", "-c", "echo 'no such port' >&2; exit 2"}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = dies.WaitReady(context.Background(), 10*time.Second, func() (bool, error) { return false, nil })
	if err == nil || !strings.Contains(err.Error(), "no such port") {
		t.Errorf("a process that exits: %v, want its failure with its output", err)
	}
}

func TestProcSignal(t *testing.T) {
	s := &Supervisor{Dir: t.TempDir(), Name: "test"}
	defer s.StopAll()
	p, err := s.Start("sleep", []string{"sleep", "30"}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	waitDone(t, p)
	if p.Err() == nil {
		t.Errorf("a killed sleep exited with status 0")
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Errorf("Signal after the exit: %v, want nil", err)
	}
}
