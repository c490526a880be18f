package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ClockTicksPerSecond is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. It is 100 on
// every Linux architecture Go supports (the kernel's HZ may differ; USER_HZ does not).
const ClockTicksPerSecond = 100

// ProcStat is the part of /proc/<pid>/stat the harness uses.
type ProcStat struct {
	PID   int
	PPID  int
	UTime int64 // clock ticks
	STime int64 // clock ticks
	// CUTime and CSTime are the children's the process has waited for (sshd's listener counts
	// each connection's processes here once they exit).
	CUTime int64 // clock ticks
	CSTime int64 // clock ticks
}

// CPU is the process's user plus system time.
func (s ProcStat) CPU() time.Duration { return TicksToDuration(s.UTime + s.STime) }

// CPUWithChildren is CPU plus that of the children the process has waited for.
func (s ProcStat) CPUWithChildren() time.Duration {
	return TicksToDuration(s.UTime + s.STime + s.CUTime + s.CSTime)
}

// TicksToDuration converts USER_HZ clock ticks.
func TicksToDuration(ticks int64) time.Duration {
	return time.Duration(ticks) * (time.Second / ClockTicksPerSecond)
}

// ParseProcStat reads one /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may itself contain spaces and parentheses, so fields are counted from the last ')'.
func ParseProcStat(b []byte) (ProcStat, error) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 1 || closing < open {
		return ProcStat{}, fmt.Errorf("proc stat: no (comm) in %q", truncate(b, 80))
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return ProcStat{}, fmt.Errorf("proc stat pid: %w", err)
	}
	// After ')': field 3 (state) is rest[0], so field N is rest[N-3].
	rest := bytes.Fields(b[closing+1:])
	const ppidField, utimeField, stimeField, cutimeField, cstimeField = 4, 14, 15, 16, 17
	if len(rest) < cstimeField-2 {
		return ProcStat{}, fmt.Errorf("proc stat: %d fields after comm, want at least %d", len(rest), cstimeField-2)
	}
	nums := [5]int64{}
	for i, field := range []int{ppidField, utimeField, stimeField, cutimeField, cstimeField} {
		nums[i], err = strconv.ParseInt(string(rest[field-3]), 10, 64)
		if err != nil {
			return ProcStat{}, fmt.Errorf("proc stat field %d: %w", field, err)
		}
	}
	return ProcStat{PID: pid, PPID: int(nums[0]), UTime: nums[1], STime: nums[2], CUTime: nums[3], CSTime: nums[4]}, nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// ReadProcStat reads /proc/<pid>/stat under procRoot (normally "/proc").
func ReadProcStat(procRoot string, pid int) (ProcStat, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return ProcStat{}, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	return ParseProcStat(b)
}

// TreeCPU is the CPU time of pid and all its live descendants: nginx's master does no work, its
// worker (a child) does. The threads of a process are already summed in its stat line.
func TreeCPU(procRoot string, pid int) (time.Duration, error) {
	root, err := ReadProcStat(procRoot, pid)
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", procRoot, err)
	}
	children := map[int][]ProcStat{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		st, err := ReadProcStat(procRoot, p)
		if err != nil {
			continue // exited since the listing
		}
		children[st.PPID] = append(children[st.PPID], st)
	}
	return sumTree(root, children), nil
}

func sumTree(root ProcStat, children map[int][]ProcStat) time.Duration {
	total := root.CPU()
	for _, c := range children[root.PID] {
		total += sumTree(c, children)
	}
	return total
}
