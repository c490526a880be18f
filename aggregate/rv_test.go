package aggregate

import (
	"errors"
	"testing"
)

// The spec's vector, and golden encodings: byte-stable whatever the map order.
func TestGlobalRVGolden(t *testing.T) {
	tests := []struct {
		rv   globalRV
		want string
	}{
		{globalRV{"cluster1": "1234", "cluster2": "5678"}, "eyJjbHVzdGVyMSI6IjEyMzQiLCJjbHVzdGVyMiI6IjU2NzgifQ"},
		{globalRV{"cluster2": "5678", "cluster1": "1234"}, "eyJjbHVzdGVyMSI6IjEyMzQiLCJjbHVzdGVyMiI6IjU2NzgifQ"},
		{globalRV{"b": "2", "a": "1", "c": "3"}, "eyJhIjoiMSIsImIiOiIyIiwiYyI6IjMifQ"},
	}
	for _, tt := range tests {
		got := tt.rv.encode()
		if got != tt.want {
			t.Errorf("encode(%v): got %s, want %s", tt.rv, got, tt.want)
		}
		back, special, err := decodeRV(got)
		if err != nil || special || len(back) != len(tt.rv) {
			t.Fatalf("decode(%s): %v %v %v", got, back, special, err)
		}
		for k, v := range tt.rv {
			if back[k] != v {
				t.Errorf("decode(%s)[%s]: got %q, want %q", got, k, back[k], v)
			}
		}
	}
	for _, s := range []string{"", "0"} {
		if _, special, err := decodeRV(s); !special || err != nil {
			t.Errorf("decode(%q): special %v %v, want special", s, special, err)
		}
	}
	for _, bad := range []string{"1234", "!!!", "e30", "eyJhIjoieCJ9"} { // a member's own, junk, {}, {"a":"x"}
		if _, _, err := decodeRV(bad); !errors.Is(err, ErrBadResourceVersion) {
			t.Errorf("decode(%q): %v, want ErrBadResourceVersion", bad, err)
		}
	}
}

func TestContinueGolden(t *testing.T) {
	c := continueToken{RV: "eyJhIjoiMSJ9", Cluster: "a", Continue: "abc"}
	const want = "eyJydiI6ImV5SmhJam9pTVNKOSIsImNsdXN0ZXIiOiJhIiwiY29udGludWUiOiJhYmMifQ"
	if got := c.encode(); got != want {
		t.Errorf("encode: got %s, want %s", got, want)
	}
	back, err := decodeContinue(want)
	if err != nil || back != c {
		t.Errorf("decode: %+v %v", back, err)
	}
	for _, bad := range []string{"", "x!", "e30"} {
		if _, err := decodeContinue(bad); !errors.Is(err, ErrBadResourceVersion) {
			t.Errorf("decode(%q): %v", bad, err)
		}
	}
}
