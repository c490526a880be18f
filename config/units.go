package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written in YAML as Go writes durations: "65s", "5m", "24h", "1h30m".
// A bare number is refused: its unit would be a guess.
type Duration struct{ time.Duration }

func (d *Duration) parseScalar(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return errors.New(`must be a duration like "65s", "5m" or "24h"`)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as it is read, so `edge explain` and tests can print configs.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ByteSize is a number of bytes, written in YAML as a plain integer ("512") or an integer with a
// unit: binary KiB, MiB, GiB (1024, 1024², 1024³) or decimal KB, MB, GB (1000, 1000², 1000³), and B.
// Units are case-insensitive and may follow a space ("32 KiB"). Fractions are refused.
type ByteSize int64

const byteSizeForm = `must be a size in bytes like "32KiB", "1MiB", "4KB" or "512"`

func (b *ByteSize) parseScalar(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

func parseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	digits := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if digits < 0 {
		digits = len(s)
	}
	if digits == 0 {
		return 0, errors.New(byteSizeForm)
	}
	n, err := strconv.ParseInt(s[:digits], 10, 64)
	if err != nil {
		return 0, errors.New(byteSizeForm)
	}
	var mult int64
	switch strings.ToLower(strings.TrimSpace(s[digits:])) {
	case "", "b":
		mult = 1
	case "kib":
		mult = 1 << 10
	case "mib":
		mult = 1 << 20
	case "gib":
		mult = 1 << 30
	case "kb":
		mult = 1000
	case "mb":
		mult = 1000 * 1000
	case "gb":
		mult = 1000 * 1000 * 1000
	default:
		return 0, errors.New(byteSizeForm)
	}
	if n > math.MaxInt64/mult {
		return 0, errors.New("is too large")
	}
	return ByteSize(n * mult), nil
}

// String writes the size with the largest binary unit that divides it: "32KiB", "1MiB", "1000".
func (b ByteSize) String() string {
	for _, u := range []struct {
		name string
		size ByteSize
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && b%u.size == 0 {
			return fmt.Sprintf("%d%s", b/u.size, u.name)
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }
