// Package docker is the cell backend: skillgate's handle on a Docker
// engine, and the only package that imports the Docker SDK
// (github.com/docker/docker), so that its move to github.com/moby/moby
// stays here. It builds images from build contexts assembled in memory
// (owners in the tar headers, every file of a plan's tree verified while
// it streams), loading one that only adds a layer on an image as that
// layer, with no build step, and several such images, one above another,
// in one archive; the built-in sandbox image and the userland
// every image built FROM scratch shares; imports a root file system as an image; runs hardened containers (no network, no
// capabilities, no privilege escalation, limits, an init, only the
// environment given) to their end, reading back what they changed in their
// workspace from their own upper layer or through the engine's API; keeps
// sessions in which checks run one by one; and sweeps what a dead run
// left, by the labels it puts on everything.
//
// It knows nothing of suites, plans or grades: it imports no package of
// pipeline, and runner hands it specs. The specs, outcomes, build context
// and labels it speaks are runner/backend's neutral types, which
// backend.go names again here; it never imports runner/kube. Its entry
// types are the seam's words, which runner checks are those of the stored
// changes.
package docker
