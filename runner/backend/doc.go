// Package backend is the seam between the runner and the engines that run
// its cells: the interface the runner asks of one (Backend: images, a cell's
// container, check sessions, the sweep; Session: one check session), the
// local engine a remote backend builds its images with (LocalEngine), and
// the neutral types they all speak: a container's spec and outcome, a
// session's and a command's, a workspace entry and its collection, a build
// context (BuildContext: a Dockerfile and the entries it unpacks, streamed
// on demand, equal inputs giving equal bytes), an image's info, the labels
// skillgate puts on what it creates and a registry's repository.
//
// It imports no engine's SDK and nothing of skillgate but the standard
// library's neighbours: runner/docker and runner/kube import it, and
// neither imports the other; the runner's packages reach an engine through
// it alone.
package backend
