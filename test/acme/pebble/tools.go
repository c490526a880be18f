//go:build tools

package pebble

import (
	_ "github.com/letsencrypt/pebble/v2/cmd/pebble"
	_ "github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv"
)
