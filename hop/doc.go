// Package hop is what every hop of a request through edge shares: the error and cause
// vocabulary with the one status mapping and error writer, the request's record (the writer
// every route answers through), and the names of the headers edge sets or strips. It imports no
// other package of edge.
package hop
