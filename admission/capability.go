package admission

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Capability is a short stable name of what a runner can run: a hash of its executor, platform,
// architecture and the features it declares (in any order). Queue signals count by it, and
// edge_runner_capability_info names the fields behind each.
func Capability(executor, platform, architecture string, features []string) string {
	fs := slices.Clone(features)
	slices.Sort(fs)
	fs = slices.Compact(fs)
	sum := sha256.Sum256([]byte(strings.Join(append([]string{executor, platform, architecture}, fs...), "\x00")))
	return hex.EncodeToString(sum[:6])
}
