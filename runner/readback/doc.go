// Package readback reads a run folder back into results, a verdict and
// reports, with no Docker and no model: what skillgate report, merge, gate,
// regrade and judge share, and what a run does last. The same stored
// records always give the same bytes.
//
// Its files: report.go rebuilds the verdict and writes every report
// (Report, ReadRun, BuildRun); evidence.go gathers each cell's evidence
// for the reports; reruns.go reads a red panel's stored reruns;
// sequential.go decides sequential stopping from the stored results and
// records it; preflight.go is the preflight's record (preflight.json) and
// its warnings; spendcap.go marks the cells the spend cap left unrun;
// shard.go the shares of --shard I/N and a shard's mark on its verdict;
// rejudged.go a run's report with its rejudged rubric grades; reused.go
// marks the cells whose rollouts run --reuse took.
//
// It may import the pipeline's stages and runner/store, runner/judge,
// runner/gateway (the sampling a cell was given), runner/agent (a
// transcript's reading) and runner/reuse (the ledger of reused rollouts); never the runner's root package, which calls it,
// nor an engine's package: runner/backend, runner/docker, runner/kube.
package readback
