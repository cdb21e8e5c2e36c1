// Package runner executes a plan: the one stage that is not a pure
// function of files. It orchestrates, and its packages do the work:
//
//	docker   the cell backend: images, hardened containers, collection, check sessions
//	kube     the other cell backend: cells and check sessions as hardened Pods of a cluster
//	gateway  the cells' only way out to a model; the scripted model; the forwarder
//	agent    one file per kind of agent: its image, environment, stdin rule, transcript
//	store    the run folder's store, whose doc describes the folder's layout
//	judge    judging a run's stored rollouts, and rejudging them with another judge
//	debian   skillgate's Debian userland: a root bootstrapped from the host's mirror
//	redact   the run's secrets out of everything stored
//	contract a source system's call rules that need a run folder: gstack
//	         skill-eval's refusals, resume and --tasks-only; run-benchmark's
//	         and benchmark-skill's selection of a skill's cases
//	internal/bounded  the one bounded parallel loop and the one capped
//	         output buffer every part of the runner uses
//
// Its own files follow a run: run.go selects the cells and runs them
// (Run), rollout.go runs one cell and stores its rollout, cell.go builds
// the cells' images and their input, environment.go the images of the suite's
// environments (and the agent's CLI layered on them), setup.go runs a case's setup and
// makes the image its agent starts from, workspace.go turns what a cell left
// into changes, inputs.go pins the trees a run reads and checks them
// again after, userskills.go hides every skill folder an agent scans outside
// the workspace, rounds.go runs a sequential policy's cells in rounds,
// model.go starts the gateway and checks the provider,
// grade.go grades stored rollouts (run: checks in a session), calibrate.go
// runs the calibration checks, integrity.go keeps the policy's fixed
// trials and reruns red panels, evaluate.go runs all of it and writes the
// verdict and reports (Evaluate, Report), and progress.go shows it.
// shard.go splits a plan's cells into the shares of --shard I/N, the same
// on every machine; store merges the shards' run folders.
// backend.go is the seam to the cell backend: the runner holds the engine
// as the interface of what it calls, Docker's or Kubernetes' (Options.Kubernetes).
//
// It imports the pipeline's stages and its own packages; none of them
// imports it.
package runner
