package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ProcStatus is the memory part of /proc/<pid>/status: what the process holds in RAM now
// (VmRSS) and the most it ever held (VmHWM, the peak the kernel keeps, which a once-a-second
// sample of VmRSS can miss).
type ProcStatus struct {
	RSS int64 // bytes
	HWM int64 // bytes
}

// ParseProcStatus reads VmRSS and VmHWM from a /proc/<pid>/status file; both must be there (a
// kernel thread or a zombie has neither).
func ParseProcStatus(b []byte) (ProcStatus, error) {
	var s ProcStatus
	var haveRSS, haveHWM bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(key) {
		case "VmRSS":
			dst, haveRSS = &s.RSS, true
		case "VmHWM":
			dst, haveHWM = &s.HWM, true
		default:
			continue
		}
		n, err := parseKB(value)
		if err != nil {
			return ProcStatus{}, fmt.Errorf("proc status %s: %w", key, err)
		}
		*dst = n
	}
	if !haveRSS || !haveHWM {
		return ProcStatus{}, fmt.Errorf("proc status: no VmRSS or VmHWM line")
	}
	return s, nil
}

// parseKB reads "   12345 kB" (the kernel's kB are KiB) into bytes.
func parseKB(v []byte) (int64, error) {
	f := bytes.Fields(v)
	if len(f) != 2 || string(f[1]) != "kB" {
		return 0, fmt.Errorf("want \"N kB\", got %q", bytes.TrimSpace(v))
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %q: %w", f[0], err)
	}
	return n << 10, nil
}

// ReadProcStatus reads /proc/<pid>/status under procRoot (normally "/proc").
func ReadProcStatus(procRoot string, pid int) (ProcStatus, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "status"))
	if err != nil {
		return ProcStatus{}, fmt.Errorf("read status of %d: %w", pid, err)
	}
	return ParseProcStatus(b)
}
