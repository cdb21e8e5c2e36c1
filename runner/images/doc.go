// Package images makes the images a run's cells start from: the agent's
// image (its CLI, on skillgate's sandbox or on a suite's environment), the
// environments' images (a Debian userland, a Dockerfile folder, an image
// pinned by digest), each case's fixture image and the one small layer of
// an arm's skills above it, each built once per run and found again by its
// key; and the read-only trees a cell is given instead of an image layer:
// the arm's verified skill snapshots and the empty folders that hide every
// skill folder an agent scans outside its workspace.
//
// Its files: cell.go the cell images, their keys and the skill trees,
// fixture.go the builds of a case's fixture image and its arms' skills
// layers, environment.go the environments' images and the agent's CLI on them,
// userskills.go the hidden user skill folders, state.go what a caller reads
// of the builds made.
//
// It builds through runner/backend's interface and may import
// runner/backend, runner/agent, runner/debian, runner/store and the
// pipeline's plan and suite; never the runner's root package nor
// runner/docker or runner/kube.
package images
