package bench

import (
	"strings"
	"testing"
)

func TestReadLedger(t *testing.T) {
	in := strings.Join([]string{
		`{"t":1000,"ev":"started","cell":2}`,
		// a runner claimed job 7 before the queued line was written
		`{"t":1001,"ev":"claimed","cell":2,"id":7,"token":"glcbt-7","state":"running","req":"r1"}`,
		`{"t":1002,"ev":"queued","cell":2,"id":7,"token":"glcbt-7"}`,
		`{"t":1003,"ev":"queued","cell":2,"id":8,"token":"glcbt-8"}`,
		`{"t":1004,"ev":"seen","cell":2,"req":"r1","route":"jobs/request"}`,
		`{"t":1005,"ev":"updated","cell":2,"id":7,"state":"success","trace":"aGk="}`,
		`{"t":1006,"ev":"seen","cell":2,"req":"r2","route":"jobs/:id"}`,
		`{"t":1007,"ev":"seen","cell":2,"req":"r2","route":"jobs/:id"}`,
		`{"t":1008,"ev":"claimed","cell":2,"id":8,"req":"r3","incarnation":1}`,
		`{"t":1009,"ev":"claimed","cell":2,"id":8,"req":"r4","incarnation":1}`,
		`{"t":1009,"ev":"cut","cell":2,"id":8,"req":"r4","incarnation":1}`,
		`{"t":1010,"ev":"que`, // cut by a kill -9
	}, "\n")
	l, err := ReadLedger(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ReadLedger: %v", err)
	}
	if !l.Partial || l.Lines() != 11 || len(l.Starts) != 1 {
		t.Errorf("partial=%v lines=%d starts=%d, want true 11 1", l.Partial, l.Lines(), len(l.Starts))
	}
	j7 := l.Jobs[7]
	if j7 == nil || j7.State != "success" || string(j7.Trace) != "hi" || j7.Token != "glcbt-7" || len(j7.Claims) != 1 || j7.Queued.IsZero() {
		t.Fatalf("job 7: %+v", j7)
	}
	if j8 := l.Jobs[8]; len(j8.Claims) != 2 || j8.State != "running" || j8.Claims[1].Req != "r4" || j8.Claims[1].Incarnation != 1 ||
		j8.Claims[0].Cut || !j8.Claims[1].Cut {
		t.Errorf("job 8: %+v", j8)
	}
	if got := l.Order; len(got) != 2 || got[0] != 7 || got[1] != 8 {
		t.Errorf("order %v, want [7 8]", got)
	}
	if d := l.Duplicates(); len(d) != 1 || d[0] != "r2" || len(l.SeenAt["r2"]) != 2 || l.SeenAt["r2"][1].UnixMilli() != 1007 {
		t.Errorf("duplicates %v (at %v), want [r2] at 1006 and 1007", d, l.SeenAt)
	}
	if _, err := ReadLedger(strings.NewReader("not json\n")); err == nil {
		t.Error("a line that is not JSON: no error")
	}
}
