package backend

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/distribution/reference"
)

// SandboxImage is the repository of the built-in base image: busybox, an unprivileged
// user agent (1000:1000) and its folders, nothing else.
const SandboxImage = "skillgate/sandbox"

// PushedImage is a local image as a registry holds it: the reference a Pod
// pulls it by names its manifest's digest, so the node runs exactly the
// bytes the local engine built.
type PushedImage struct {
	// Local is the image's local reference, ID its local image ID.
	Local, ID string
	// Ref is REPOSITORY@sha256:..., the manifest the registry holds.
	Ref string
}

// RegistryRepo is the repository of registry (HOST[:PORT][/PATH]) that holds
// local's image: the registry's path and the last element of local's
// repository, so skillgate/claude-code:2.1.332 goes to REGISTRY/claude-code.
func RegistryRepo(registry, local string) (reference.Named, error) {
	loc, err := reference.ParseNormalizedNamed(local)
	if err != nil {
		return nil, fmt.Errorf("parse image %s: %w", local, err)
	}
	reg := strings.TrimSuffix(registry, "/")
	repo, err := reference.ParseNamed(reg + "/" + path.Base(reference.Path(loc)))
	if err != nil || !reference.IsNameOnly(repo) || reg == "" {
		if err == nil {
			err = errors.New("a tag or digest is not part of a registry")
		}
		return nil, fmt.Errorf("parse registry %q: %w (want HOST[:PORT][/PATH], such as registry.example.com/team/skillgate or 127.0.0.1:5000/skillgate)", registry, err)
	}
	return repo, nil
}

// CheckRegistry refuses a registry reference RegistryRepo cannot place
// images in, before anything is built or pushed.
func CheckRegistry(registry string) error {
	_, err := RegistryRepo(registry, SandboxImage)
	return err
}
