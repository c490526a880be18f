package admission

import "testing"

func TestCapability(t *testing.T) {
	a := Capability("docker", "linux", "amd64", []string{"variables", "artifacts", "cache"})
	if len(a) != 12 {
		t.Errorf("capability %q: want 12 hex digits", a)
	}
	if b := Capability("docker", "linux", "amd64", []string{"cache", "variables", "artifacts", "cache"}); b != a {
		t.Errorf("same features in another order: %q, want %q", b, a)
	}
	for _, other := range []string{
		Capability("shell", "linux", "amd64", []string{"variables", "artifacts", "cache"}),
		Capability("docker", "linux", "arm64", []string{"variables", "artifacts", "cache"}),
		Capability("docker", "linux", "amd64", []string{"variables", "artifacts"}),
		Capability("dockerlinux", "", "amd64", []string{"variables", "artifacts", "cache"}),
	} {
		if other == a {
			t.Errorf("another runner has the same capability %q", a)
		}
	}
}
