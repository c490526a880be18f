// Module pebble builds Let's Encrypt's Pebble ACME test server and its challenge test server for
// the TLS tests (scripts/pebble.sh).
module gitlab.com/edge/edge/test/acme/pebble

go 1.24.0

require github.com/letsencrypt/pebble/v2 v2.10.1
