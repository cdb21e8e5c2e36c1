// Package kube is the Kubernetes cell backend, and the only package that
// imports client-go. It runs each cell as a Pod and each check session as
// another, hardened as runner/docker hardens a container (uid 1000, no
// privilege escalation, every capability dropped, a read-only root, the
// runtime's seccomp profile, no service-account token, memory and CPU
// limits, a deadline) and with no network but the gateway: its socket is made
// in the Pod by a relay that an exec of the API runs in the hold container,
// whose standard input and output carry the agent's connections to
// skillgate's gateway (runner/gateway/tunnel), so a Pod runs on any node and
// needs no network at all. Folders of skillgate's machine a Pod is given
// (the gateway's, a case's) stream in with its content; on a cluster whose one
// node is skillgate's machine, Config.HostPath mounts them by hostPath instead.
//
// Nothing reaches a Pod through a registry but its image: the cell's
// content (fixture, skills, agent files, prompt) streams through the API
// into an init container that unpacks it into the Pod's emptyDir folders,
// the agent's output is read by attaching to it, and its workspace comes
// back through an exec of tar in a container that holds the folder
// read-only once the agent has ended. Images are still built and named by
// the local Docker engine (runner/docker, handed to Connect as a
// backend.LocalEngine): a cell image here is the
// content of its build context, kept in memory and streamed into each Pod
// that starts from it, and an agent image must be in the cluster already:
// loaded into the node, or pushed to a registry the nodes pull from
// (Config.Registry), where a Pod names it by the digest the push recorded
// for the local engine's build.
//
// It knows nothing of suites or plans: runner hands it the neutral specs of
// runner/backend and reads back the same outcomes. It imports runner/backend
// and never runner/docker.
package kube
