package server

import (
	"io"
	"log/slog"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/front"
)

// NewLogger is edge's structured log on w, in the configured level and format.
func NewLogger(c config.Log, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevel(c), ReplaceAttr: durationsAsText}
	if c.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// newAccessLog writes access lines to w as NewLogger's logger would, without its cost per line.
func newAccessLog(c config.Log, w io.Writer) *front.AccessLog {
	return front.NewAccessLog(w, c.Format, logLevel(c) <= slog.LevelInfo)
}

func logLevel(c config.Log) slog.Level {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		level = slog.LevelInfo
	}
	return level
}

// durationsAsText writes durations as "30s", not as nanoseconds, in both formats.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
