package tunnel

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hashicorp/yamux"
)

// muxSettings are the options both sides share.
type muxSettings struct {
	window    *uint32
	keepAlive *time.Duration
	logger    **slog.Logger
}

// configure fills the shared defaults in place and builds the yamux config both sides use.
func (m muxSettings) configure() (*yamux.Config, error) {
	if *m.window == 0 {
		*m.window = DefaultStreamWindow
	}
	if *m.keepAlive <= 0 {
		*m.keepAlive = DefaultKeepAlive
	}
	if *m.logger == nil {
		*m.logger = slog.New(slog.DiscardHandler)
	}
	cfg := yamuxConfig(*m.window, *m.keepAlive, *m.logger)
	if err := yamux.VerifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("tunnel: %w", err)
	}
	return cfg, nil
}

func yamuxConfig(window uint32, keepAlive time.Duration, log *slog.Logger) *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.MaxStreamWindowSize = window
	cfg.EnableKeepAlive = true
	cfg.KeepAliveInterval = keepAlive
	cfg.LogOutput = nil
	cfg.Logger = yamuxLogger{log}
	return cfg
}

// yamuxLogger sends yamux's "[ERR] ..." / "[WARN] ..." lines to slog. The session's end is
// reported by its owner, so these are details: Info at most.
type yamuxLogger struct{ log *slog.Logger }

func (l yamuxLogger) Print(v ...any)                 { l.line(fmt.Sprint(v...)) }
func (l yamuxLogger) Println(v ...any)               { l.line(fmt.Sprint(v...)) }
func (l yamuxLogger) Printf(format string, v ...any) { l.line(fmt.Sprintf(format, v...)) }

func (l yamuxLogger) line(s string) {
	s = strings.TrimSpace(s)
	level := slog.LevelDebug
	for prefix, lv := range map[string]slog.Level{"[ERR]": slog.LevelInfo, "[WARN]": slog.LevelDebug} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			s, level = strings.TrimSpace(rest), lv
		}
	}
	l.log.Log(context.Background(), level, s)
}
