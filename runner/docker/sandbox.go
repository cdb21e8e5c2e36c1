package docker

import (
	"context"
	"fmt"
)

// sandboxDockerfile unpacks the layer and sets the agent's environment.
const sandboxDockerfile = `FROM scratch
ADD ` + LayerTar + ` /
ENV PATH=/bin:/usr/bin HOME=/home/agent
USER 1000:1000
WORKDIR /workspace
CMD ["/bin/sh"]
`

// EnsureSandbox returns the reference of the built-in sandbox image, building it first if
// the engine does not have it. The image is tagged by the digest of its build inputs, so a
// new busybox or a new layout gives a new tag, and also tagged latest.
func (e *Engine) EnsureSandbox(ctx context.Context) (ref string, err error) {
	bc, err := sandboxContext()
	if err != nil {
		return "", err
	}
	d, err := bc.Digest()
	if err != nil {
		return "", fmt.Errorf("build sandbox image: %w", err)
	}
	ref = SandboxImage + ":" + d.Encoded()[:12]
	if _, ok, err := e.ImageExists(ctx, ref); err != nil || ok {
		return ref, err
	}
	if _, err := e.BuildImage(ctx, ref, map[string]string{LabelImage: "sandbox"}, bc); err != nil {
		return "", err
	}
	if err := e.Tag(ctx, ref, SandboxImage+":latest"); err != nil {
		return "", err
	}
	return ref, nil
}

// sandboxContext assembles the sandbox image's build context.
func sandboxContext() (*BuildContext, error) {
	if err := CheckStatic(BusyboxPath); err != nil {
		return nil, fmt.Errorf("sandbox image needs a static busybox at %s: %w; install one with `apt-get install busybox-static`", BusyboxPath, err)
	}
	bc := NewBuildContext(sandboxDockerfile)
	bc.AddDir("bin", 0o755, 0, 0)
	bc.AddHostFile("bin/busybox", BusyboxPath, 0, 0)
	for _, a := range SandboxApplets {
		bc.AddSymlink("bin/"+a, "busybox", 0, 0)
	}
	// For scripts that start with #!/usr/bin/env.
	bc.AddDir("usr", 0o755, 0, 0)
	bc.AddDir("usr/bin", 0o755, 0, 0)
	bc.AddSymlink("usr/bin/env", "../../bin/busybox", 0, 0)
	bc.AddDir("etc", 0o755, 0, 0)
	AddUserland(bc, "/bin/sh")
	if err := bc.Check(); err != nil {
		return nil, fmt.Errorf("build sandbox image: %w", err)
	}
	return bc, nil
}
