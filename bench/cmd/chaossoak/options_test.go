package main

import (
	"io"
	"testing"
	"time"
)

func TestParseOptions(t *testing.T) {
	o, err := parseOptions([]string{"-quick", "-seed", "7"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.duration != quickDuration || o.warmup != 10*time.Second || o.faultMin != 6*time.Second || o.seed != 7 || o.runners != 20 {
		t.Errorf("-quick: %+v", o)
	}
	o, err = parseOptions([]string{"-quick", "-duration", "2m"}, io.Discard)
	if err != nil || o.duration != 2*time.Minute {
		t.Errorf("-quick -duration 2m: %v, %v", o.duration, err)
	}
	o, err = parseOptions([]string{"-faults", "edge, agent"}, io.Discard)
	if err != nil || len(o.kinds) != 2 || o.kinds[1] != faultAgent {
		t.Errorf("-faults edge, agent: %v, %v", o.kinds, err)
	}
	o, err = parseOptions([]string{"-faults", "cell-mid-answer,runner-reset-parked,cell"}, io.Discard)
	if err != nil || len(o.kinds) != 3 || o.kinds[0] != faultCellCut || o.kinds[1] != faultRunnerReset {
		t.Errorf("-faults cell-mid-answer,runner-reset-parked,cell: %v, %v", o.kinds, err)
	}
	o, err = parseOptions(nil, io.Discard)
	if err != nil || o.duration != defaultDuration || o.seed == 0 || len(o.kinds) != 6 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"-duration", "1s"}, {"-runners", "2"}, {"-fault-min", "10s", "-fault-max", "5s"}, {"extra"}, {"-settle-min", "3m"}, {"-faults", "edge,disk"}} {
		if _, err := parseOptions(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
