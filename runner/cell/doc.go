// Package cell runs one cell from its image to its stored rollout: the
// case's setup and the image its agent starts from (setup.go), the cell's
// input (input.go: the prompt, the seed conversation, the replies and the
// agent's command), its hardened container started through the backend
// (rollout.go: Runner.Run and the container's spec), the workspace it left
// turned into changes against the initial workspace (workspace.go) and the
// rollout committed to the store. A Docker or skillgate failure is stored
// as an invalid rollout.
//
// The Runner is made and handed its engine, gateway, cases and arms by the
// runner's root package, which also admits each cell under the spend cap;
// this package never imports the root, nor runner/docker or runner/kube: it
// reaches the engine through runner/backend, its images through
// runner/images and its setup's check session through runner/checks.
package cell
