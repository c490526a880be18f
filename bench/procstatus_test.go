package bench

import (
	"os"
	"testing"
)

func TestParseProcStatus(t *testing.T) {
	status := "Name:\tedge\nUmask:\t0022\nState:\tS (sleeping)\nVmPeak:\t 1300000 kB\nVmHWM:\t  131072 kB\nVmRSS:\t  102400 kB\nThreads:\t7\n"
	got, err := ParseProcStatus([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if want := (ProcStatus{RSS: 100 << 20, HWM: 128 << 20}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for name, bad := range map[string]string{
		"kernel thread (no Vm lines)": "Name:\tkthreadd\nState:\tS (sleeping)\n",
		"no unit":                     "VmHWM:\t1\nVmRSS:\t1\n",
		"not a number":                "VmHWM:\tx kB\nVmRSS:\t1 kB\n",
	} {
		if _, err := ParseProcStatus([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestReadProcStatusSelf(t *testing.T) {
	s, err := ReadProcStatus("/proc", os.Getpid())
	if err != nil {
		t.Fatalf("own /proc status: %v", err)
	}
	if s.RSS <= 0 || s.HWM < s.RSS {
		t.Errorf("own status %+v: want 0 < RSS <= HWM", s)
	}
}
