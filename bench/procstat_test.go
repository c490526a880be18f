package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    ProcStat
		wantErr bool
	}{
		{
			name: "nginx worker",
			line: "4242 (nginx) S 4241 4241 4241 0 -1 4194624 1200 0 0 0 731 269 0 0 20 0 1 0 123456 12345678 1234 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
			want: ProcStat{PID: 4242, PPID: 4241, UTime: 731, STime: 269},
		},
		{
			name: "comm with spaces and parens",
			line: "77 (we (ird) name) R 1 77 77 0 -1 0 0 0 0 0 5 7 0 0 20 0 4 0 1 1 1",
			want: ProcStat{PID: 77, PPID: 1, UTime: 5, STime: 7},
		},
		{
			name: "waited-for children",
			line: "5 (sshd) S 1 5 5 0 -1 0 0 0 0 0 2 1 30 40 20 0 1 0",
			want: ProcStat{PID: 5, PPID: 1, UTime: 2, STime: 1, CUTime: 30, CSTime: 40},
		},
		{name: "no comm", line: "77 R 1 2 3", wantErr: true},
		{name: "too short", line: "77 (x) R 1 77 77 0", wantErr: true},
		{name: "bad utime", line: "77 (x) R 1 77 77 0 -1 0 0 0 0 0 u 7 0 0", wantErr: true},
		{name: "bad pid", line: "x (x) R 1 77 77 0 -1 0 0 0 0 0 5 7 0 0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProcStat([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error: got %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("stat: got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestProcStatCPU(t *testing.T) {
	st := ProcStat{UTime: 150, STime: 50, CUTime: 80, CSTime: 20}
	if got, want := st.CPU(), 2*time.Second; got != want {
		t.Errorf("cpu: got %v, want %v", got, want)
	}
	if got, want := st.CPUWithChildren(), 3*time.Second; got != want {
		t.Errorf("cpu with children: got %v, want %v", got, want)
	}
}

// TestTreeCPU builds a fake /proc: 10 is the root (nginx master), 11 its worker, 12 a grandchild,
// 20 an unrelated process that must not be counted.
func TestTreeCPU(t *testing.T) {
	root := t.TempDir()
	procs := []struct{ pid, ppid, utime, stime int }{
		{10, 1, 1, 1}, {11, 10, 100, 50}, {12, 11, 10, 0}, {20, 1, 999, 999},
	}
	for _, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(p.pid))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fields := []string{strconv.Itoa(p.pid), "(p)", "S", strconv.Itoa(p.ppid)}
		for i := 5; i <= 13; i++ {
			fields = append(fields, "0")
		}
		fields = append(fields, strconv.Itoa(p.utime), strconv.Itoa(p.stime), "0", "0", "20")
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(strings.Join(fields, " ")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "self-not-a-pid"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := TreeCPU(root, 10)
	if err != nil {
		t.Fatalf("TreeCPU: %v", err)
	}
	if want := TicksToDuration(1 + 1 + 100 + 50 + 10); got != want {
		t.Errorf("tree cpu: got %v, want %v", got, want)
	}
	if _, err := TreeCPU(root, 99); err == nil {
		t.Errorf("TreeCPU of a missing pid: got nil error")
	}
}

func TestReadProcStatSelf(t *testing.T) {
	st, err := ReadProcStat("/proc", os.Getpid())
	if err != nil {
		t.Fatalf("no /proc here: %v", err)
	}
	if st.PID != os.Getpid() {
		t.Errorf("pid: got %v, want %v", st.PID, os.Getpid())
	}
	if st.PPID != os.Getppid() {
		t.Errorf("ppid: got %v, want %v", st.PPID, os.Getppid())
	}
}
