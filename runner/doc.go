// Package runner executes a plan: the one stage that is not a pure
// function of files. Its root package orchestrates; its rooms, one per job,
// do the work:
//
//	backend   the seam to the engine that runs the cells: the interface the
//	          runner asks of one and the neutral types it speaks (a container's
//	          spec and outcome, a check session's, a build context, an image's info)
//	docker    the Docker backend: images, hardened containers, collection,
//	          check sessions; the only importer of the Docker SDK
//	kube      the Kubernetes backend: cells and check sessions as hardened Pods;
//	          it imports backend, never docker
//	images    the images a run needs: the agent's, the environments', each
//	          case's fixture image and its arms' skills layer, the skill trees
//	cell      one cell from its image to its stored rollout: setup, input,
//	          the container (Runner.Run), the workspace's changes
//	checks    what a run: check session is made of: its folders, limits, the
//	          final workspace rebuilt from stored changes, its start and outcome;
//	          the calibration checks' cells and grading
//	readback  the Docker-free reading of a run folder back into results, a
//	          verdict and reports (Report, ReadRun): what report, merge, gate,
//	          regrade and judge share
//	gateway   the cells' only way out to a model; the scripted model; the forwarder
//	agent     one file per kind of agent: its image, environment, stdin rule, transcript
//	store     the run folder's store, whose doc describes the folder's layout
//	spend     the spend cap: the budget that admits each cell and model call
//	judge     judging a run's stored rollouts, and rejudging them with another judge
//	cache     the machine's store: verified snapshots of the trees plans digest,
//	          and the rollouts runs kept (run --keep-rollouts, keephook.go),
//	          shared by every run folder of the machine, and their gc
//	reuse     run --reuse: stored rollouts of the same keys taken from another run
//	          folder, a pack or the cache, verified as merge verifies them
//	debian    skillgate's Debian userland: a root bootstrapped from the host's mirror
//	redact    the run's secrets out of everything stored
//	contract  a source system's call rules that need a run folder: gstack
//	          skill-eval's refusals, resume and --tasks-only; run-benchmark's
//	          and benchmark-skill's selection of a skill's cases
//	internal/bounded  the one bounded parallel loop and the one capped
//	          output buffer every part of the runner uses
//
// The root's own files follow a run: run.go selects the cells and runs them
// (Run); agents.go runs a plan on several agents, one agent's share after
// another, into one run folder; cachehook.go pins trees through the
// machine's cache; reusehook.go takes what --reuse offers and
// reusedrift.go refuses it when the provider or the agent changed; cells.go starts the cell room's Runner (the gateway, the engine,
// the sweep of a dead run's containers), admits each cell under the spend
// cap (runAdmitted) and prepares the images ahead; inputs.go pins the trees
// a run reads and checks them again after; rounds.go runs a sequential
// policy's cells in rounds; model.go starts the gateway and checks the
// provider; faultstop.go stops a run the provider refuses; grade.go grades
// stored rollouts, driving the run: check sessions of runner/checks
// (runChecks); preflight.go and preflight_run.go run each check once on a
// case's untouched workspace and its reference; calibrate.go runs the
// calibration checks of runner/checks; integrity.go keeps the
// policy's fixed trials and reruns red panels; evaluate.go runs all of it
// and has runner/readback write the verdict and reports (Evaluate);
// chrisbanes.go regrades a run under the suite as it is now (RegradeRun);
// readback.go names runner/readback's entry points as the runner always
// has; progress.go shows it; shard.go splits a plan's cells into the shares
// of --shard I/N (store merges the shards' run folders); push.go pushes a
// run's images to a registry. backend.go connects to the engine the
// options name, Docker's or Kubernetes' (Options.Kubernetes): the one file
// that names the Docker engine.
//
// It imports the pipeline's stages and its own packages; none of them
// imports it. Among the rooms the arrows point one way: cell imports
// images and checks, checks imports images, and all three reach the engine
// through backend alone; readback imports no engine's package.
package runner
