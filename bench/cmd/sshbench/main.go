// Command sshbench measures SSH into a workspace through edge against SSH straight to the
// workspace's sshd: scp throughput each way (MB/s, and the ratio through edge / direct) and the
// latency of `ssh ... true` (wall time of a whole login, command and exit), in interleaved rounds.
//
// It starts, on 127.0.0.1 only, a real OpenSSH sshd (generated config and keys), edge (built with
// `go build ./cmd/edge`; listen.ssh, the static workspace authorizer, workspaces.ssh) and
// `edge agent --allow-port <sshd port>`. Direct: ssh/scp log in to sshd with the key edge uses, as
// sshd's user. Through edge: ssh/scp log in to edge as the workspace with a personal access token
// as the password (given by an SSH_ASKPASS script); edge opens its own SSH connection to sshd
// through the agent's tunnel.
package main

import "gitlab.com/edge/edge/bench"

func main() {
	bench.Main("sshbench", parseOptions, run)
}
