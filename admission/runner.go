package admission

import (
	"encoding/json"
)

// Unknown is the capability of a runner whose jobs/request body edge did not read.
const Unknown = "unknown"

// RunnerOf reads the runner from its jobs/request body: the info block gitlab-runner sends
// (executor, platform, architecture, version and the features it declares true).
func RunnerOf(body []byte) Runner {
	var b struct {
		Info struct {
			Executor     string          `json:"executor"`
			Platform     string          `json:"platform"`
			Architecture string          `json:"architecture"`
			Version      string          `json:"version"`
			Features     map[string]bool `json:"features"`
		} `json:"info"`
	}
	if len(body) == 0 || json.Unmarshal(body, &b) != nil {
		return Runner{Capability: Unknown}
	}
	i := b.Info
	var features []string
	for f, on := range i.Features {
		if on {
			features = append(features, f)
		}
	}
	return Runner{Executor: i.Executor, Platform: i.Platform, Architecture: i.Architecture, Version: i.Version,
		Capability: Capability(i.Executor, i.Platform, i.Architecture, features)}
}
