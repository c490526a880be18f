package main

import (
	"time"

	"gitlab.com/edge/edge/bench"
)

type jsonRun struct {
	Case               string             `json:"case"`
	Round              int                `json:"round"`
	Connections        int                `json:"connections"`
	Requests           int64              `json:"requests"`
	RequestsPerSecond  float64            `json:"requests_per_second"`
	P50Seconds         float64            `json:"p50_seconds"`
	P99Seconds         float64            `json:"p99_seconds"`
	ProxyCPUSeconds    float64            `json:"proxy_cpu_seconds"`
	ProxyCPUByProcess  map[string]float64 `json:"proxy_cpu_seconds_by_process,omitempty"`
	UpstreamCPUSeconds float64            `json:"upstream_cpu_seconds"`
	SocketErrors       int64              `json:"socket_errors"`
	Non2xx3xx          int64              `json:"non_2xx_3xx"`
}

type jsonRow struct {
	Case                            string             `json:"case"`
	Label                           string             `json:"label"`
	Rounds                          int                `json:"rounds"`
	RequestsPerSecond               float64            `json:"requests_per_second"`
	P50Seconds                      float64            `json:"p50_seconds"`
	P99Seconds                      float64            `json:"p99_seconds"`
	ProxyCPUSecondsPerRequest       float64            `json:"proxy_cpu_seconds_per_request,omitempty"`
	ProxyCPUSecondsPerRequestByProc map[string]float64 `json:"proxy_cpu_seconds_per_request_by_process,omitempty"`
	UpstreamCPUSecondsPerRequest    float64            `json:"upstream_cpu_seconds_per_request"`
	Errors                          int64              `json:"errors"`
}

type jsonTransferBatch struct {
	Path              string             `json:"path"`
	Direction         string             `json:"direction"`
	Round             int                `json:"round"`
	Bytes             []int64            `json:"bytes"`
	Seconds           []float64          `json:"seconds"`
	ProxyCPUSeconds   float64            `json:"proxy_cpu_seconds"`
	ProxyCPUByProcess map[string]float64 `json:"proxy_cpu_seconds_by_process,omitempty"`
}

type jsonTransferRow struct {
	Path                  string  `json:"path"`
	Direction             string  `json:"direction"`
	Transfers             int     `json:"transfers"`
	Bytes                 int64   `json:"bytes"`
	MBPerSecond           float64 `json:"mb_per_second"`
	SlowestMBPerSecond    float64 `json:"slowest_mb_per_second"`
	ProxyCPUSecondsPerMiB float64 `json:"proxy_cpu_seconds_per_mib,omitempty"`
}

func seconds(m map[string]time.Duration) map[string]float64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v.Seconds()
	}
	return out
}

func jsonRuns(runs []bench.Run, conns int) []jsonRun {
	var out []jsonRun
	for _, r := range runs {
		out = append(out, jsonRun{
			Case: r.Case, Round: r.Round, Connections: conns, Requests: r.Wrk.Requests, RequestsPerSecond: r.Wrk.RequestsPerS,
			P50Seconds: r.Wrk.P50().Seconds(), P99Seconds: r.Wrk.P99().Seconds(),
			ProxyCPUSeconds: r.ProxyCPU.Seconds(), ProxyCPUByProcess: seconds(r.Parts), UpstreamCPUSeconds: r.UpstreamCPU.Seconds(),
			SocketErrors: r.Wrk.SocketErrors, Non2xx3xx: r.Wrk.Non2xx3xx,
		})
	}
	return out
}

func jsonRows(rows []bench.Row) []jsonRow {
	var out []jsonRow
	for _, r := range rows {
		out = append(out, jsonRow{
			Case: r.Case, Label: r.Label, Rounds: r.Rounds, RequestsPerSecond: r.RPS,
			P50Seconds: r.P50.Seconds(), P99Seconds: r.P99.Seconds(),
			ProxyCPUSecondsPerRequest: r.ProxyCPUPerRequest.Seconds(), ProxyCPUSecondsPerRequestByProc: seconds(r.PartsPerRequest),
			UpstreamCPUSecondsPerRequest: r.UpstreamCPUPerRequest.Seconds(), Errors: r.Errors,
		})
	}
	return out
}

// jsonDoc is what --json and edgebench.json hold: every run, the medians and the goals, for
// tracking numbers across commits.
type jsonDoc struct {
	Time            time.Time           `json:"time"`
	Rounds          int                 `json:"rounds"`
	Duration        string              `json:"duration"`
	Connections     int                 `json:"connections"`
	Threads         int                 `json:"threads"`
	Pinned          bool                `json:"pinned"`
	Runs            []jsonRun           `json:"runs"`
	Medians         []jsonRow           `json:"medians"`
	LatencyRuns     []jsonRun           `json:"latency_runs,omitempty"`
	LatencyMedians  []jsonRow           `json:"latency_medians,omitempty"`
	Transfers       []jsonTransferBatch `json:"transfers,omitempty"`
	TransferMedians []jsonTransferRow   `json:"transfer_medians,omitempty"`
	Goals           []bench.Goal        `json:"goals"`
}

func newJSONDoc(o options, pinned bool, res results, rows reportRows, goals []bench.Goal) jsonDoc {
	doc := jsonDoc{
		Time: time.Now().UTC(), Rounds: o.rounds, Duration: o.duration.String(), Connections: o.connections, Threads: o.threads,
		Pinned: pinned, Runs: jsonRuns(res.runs, o.connections), Medians: jsonRows(rows.load),
		LatencyRuns: jsonRuns(res.latency, 1), LatencyMedians: jsonRows(rows.latency), Goals: goals,
	}
	for _, b := range res.transfers {
		jb := jsonTransferBatch{Path: b.Path, Direction: b.Direction, Round: b.Round,
			ProxyCPUSeconds: b.ProxyCPU.Seconds(), ProxyCPUByProcess: seconds(b.Parts)}
		for _, s := range b.Samples {
			jb.Bytes = append(jb.Bytes, s.Bytes)
			jb.Seconds = append(jb.Seconds, s.Elapsed.Seconds())
		}
		doc.Transfers = append(doc.Transfers, jb)
	}
	for _, r := range rows.transfers {
		doc.TransferMedians = append(doc.TransferMedians, jsonTransferRow{
			Path: r.Path, Direction: r.Direction, Transfers: r.Transfers, Bytes: r.Bytes, MBPerSecond: r.MBps,
			SlowestMBPerSecond: r.MinMBps, ProxyCPUSecondsPerMiB: r.ProxyCPUPerMiB.Seconds(),
		})
	}
	return doc
}
