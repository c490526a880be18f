// Package registry says which edge instance holds which agent: every agent connection (tunnel)
// is registered by the edge that holds it, in memory for a single instance or in Redis for
// several, so any edge can find the holder of an agent, wait for it to connect, or list it.
// It imports no other project package but the guard.
package registry
