// Package agent holds what skillgate knows of each kind of agent, one file
// per kind (claude.go, codex.go, opencode.go, pi.go, gemini.go, command.go)
// and one static table of them (agent.go): the recipe its image is built from (npm package, version,
// binary), the environment and files it needs in a cell to reach its model
// through the gateway, how it takes a prompt too large for its command
// line, and the parser of its transcript. image.go and npm.go build an
// agent's image FROM scratch from its official npm packages, nodeapp.go a
// Node.js CLI's tree from its lockfile (pi/, gemini/); transcript.go
// holds what the parsers share. It imports package docker for build
// contexts and grade for telemetry, nothing of the runner.
package agent
