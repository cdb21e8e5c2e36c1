package docker

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
)

// BusyboxPath is where the host's static busybox is taken from.
const BusyboxPath = "/bin/busybox"

// SandboxApplets are the busybox applets linked into /bin.
var SandboxApplets = []string{
	"sh", "ls", "cat", "grep", "sed", "awk", "find", "mkdir", "rm", "cp", "mv", "echo",
	"printf", "test", "[", "head", "tail", "wc", "sort", "diff", "env", "sleep", "true",
	"false", "id", "touch", "tr", "cut", "dd", "yes", "xargs", "nc", "wget", "ping", "chmod",
	"stat", "date", "basename", "dirname", "tee", "uname", "seq", "timeout", "uniq", "expr",
	"ln", "readlink", "realpath", "pwd", "which", "cmp", "comm", "paste", "rev", "tac", "nl",
	"sha256sum", "md5sum", "base64", "od", "gzip", "gunzip", "tar", "mktemp", "kill", "ps",
}

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

// CheckStatic fails unless the file is an ELF executable without a dynamic loader: a
// FROM scratch image has no libc for it.
func CheckStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New("it is dynamically linked")
		}
	}
	return nil
}

// AddUserland gives an image built FROM scratch its users (root, and agent
// as uid 1000 with the login shell given), /tmp, the agent's home and
// /workspace.
func AddUserland(bc *BuildContext, shell string) {
	bc.AddFile("etc/passwd", 0o644, 0, 0, []byte(
		"root:x:0:0:root:/root:"+shell+"\n"+
			"agent:x:1000:1000:agent:/home/agent:"+shell+"\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	bc.AddFile("etc/group", 0o644, 0, 0, []byte(
		"root:x:0:\n"+
			"agent:x:1000:\n"+
			"nogroup:x:65534:\n"))
	bc.AddDir("root", 0o700, 0, 0)
	bc.AddDir("tmp", 0o1777, 0, 0)
	bc.AddDir("home", 0o755, 0, 0)
	bc.AddDir("home/agent", 0o755, 1000, 1000)
	bc.AddDir("workspace", 0o755, 1000, 1000)
}
