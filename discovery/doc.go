// Package discovery answers "where is it": which cell owns a job id, a learned job, or a routing
// value the classify service knows about. It imports no other project package.
//
// Lookups sit on the per-request hot path, so they do not allocate, and the caches are split into
// independently locked shards instead of sharing one mutex.
package discovery
