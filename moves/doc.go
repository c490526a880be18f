// Package moves keeps the organizations that moved to another cell: what GitLab's migration
// tooling says (organization N now lives in cell M, frozen while its data is copied, then
// switched), stored where every edge sees it (the registry's Redis, or memory for one edge) and
// mirrored in each edge's memory, so that a request never waits on the store to learn of a move.
package moves
