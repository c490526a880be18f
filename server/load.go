package server

import (
	"errors"
	"fmt"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/internal/cli"
)

// LoadConfig reads and validates a config; problems are usage errors (exit 2).
func LoadConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		var problems config.Problems
		if errors.As(err, &problems) {
			return nil, cli.UsageError{Err: fmt.Errorf("%d problem(s) in %s:\n%w", len(problems), path, problems)}
		}
		return nil, cli.UsageError{Err: err}
	}
	return cfg, nil
}

// Load reads the config file with what the flags set over it, as every reload does.
func (o Options) Load() (*config.Config, error) {
	cfg, err := LoadConfig(o.Path)
	if err != nil {
		return nil, err
	}
	o.override(cfg)
	return cfg, nil
}

func (o Options) override(cfg *config.Config) {
	if o.AdvertiseInternal != "" {
		cfg.Listen.AdvertiseInternal = o.AdvertiseInternal
	}
}
