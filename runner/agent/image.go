package agent

import (
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/skillgate/skillgate/runner/backend"

	"github.com/opencontainers/go-digest"
)

// recipe says where an agent's native binary is in its npm packages and where it
// goes in the image.
type recipe struct {
	pkg      string // the npm package
	platform string // its optional dependency for linux-x64, holding the binary
	// dir is the folder of the platform package (below its "package/" root) whose
	// files go to the image at dest; skip excludes some of them.
	dir, dest string
	skip      []string
	bin       string            // the binary, relative to dest
	links     map[string]string // extra symlinks: image path → target
	env       string            // extra ENV of the Dockerfile
	version   string            // default version
	// extras are programs the CLI runs that its own packages lack, each
	// taken from another npm package at a pinned version, so the image
	// still comes from npm alone, offline once cached.
	extras []extraFile
	// node, when set, makes the CLI a Node.js program installed from its lockfile
	// (pkg, platform, dir and bin are then unused): its tree goes to dest.
	node *nodeApp
}

// extraFile is one file of another npm package that an agent's image carries.
type extraFile struct {
	pkg, version string
	file         string // in the package, below its "package/" root
	dest         string // in the image
}

// agentApplets are busybox applets an agent's image has on top of the sandbox's.
var agentApplets = []string{
	"patch", "whoami", "du", "df", "hostname", "unzip", "xxd", "hexdump", "less", "more", "vi",
	"strings", "bzip2", "bunzip2", "bzcat", "xz", "unxz", "xzcat", "zcat", "sha1sum",
	"sha512sum", "fold", "rmdir", "free", "clear", "nproc", "shuf", "truncate", "egrep",
	"fgrep", "groups", "unlink", "time",
}

// Host files an agent image is made of besides the agent.
const (
	bashStaticPath = "/bin/bash-static"
	localeDir      = "/usr/lib/locale/C.utf8"
)

// libDirs are where the host's shared libraries are searched, in order. They all go to
// /lib/x86_64-linux-gnu in the image, which the glibc loader searches without a cache.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

const imageLibDir = "lib/x86_64-linux-gnu"

const agentDockerfile = `FROM scratch
ADD ` + backend.LayerTar + ` /
ENV PATH=/usr/local/bin:/bin HOME=/home/agent USER=agent LANG=C.UTF-8 SHELL=/bin/bash%s
USER 1000:1000
WORKDIR /workspace
CMD ["/bin/bash"]
`

// layeredDockerfile puts an agent's CLI on an environment's image (a Debian userland, a
// suite's own image), which brings its own shell, libraries and users.
const layeredDockerfile = `FROM %s
ADD ` + backend.LayerTar + ` /
ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/agent USER=agent LANG=C.UTF-8 SHELL=/bin/bash%s
USER 1000:1000
WORKDIR /workspace
`

// Base is an environment's image that an agent's CLI is layered on: its reference, as a
// Dockerfile's FROM names it, and its ID.
type Base struct {
	Ref, ID string
}

// Builder is what building an agent's image asks of an engine.
type Builder interface {
	ImageExists(ctx context.Context, ref string) (id string, ok bool, err error)
	BuildImage(ctx context.Context, tag string, labels map[string]string, bc *backend.BuildContext) (id string, err error)
	Tag(ctx context.Context, source, target string) error
}

// BuildImage builds the image of an agent's CLI ("claude-code" or "codex") at a pinned
// version ("" for the default) from its official npm packages, and returns its reference
// skillgate/AGENT:VERSION-DIGEST12, also tagged skillgate/AGENT:VERSION. The image is built
// FROM scratch with networking off: the native binary, the shared libraries it needs from
// the host (if it has a dynamic loader), the host's static busybox and bash-static, the
// C.utf8 locale, and a user agent (1000:1000) owning /home/agent and /workspace. The npm
// tarballs are cached under the user cache folder (skillgate/npm); an image whose
// build context is unchanged is not rebuilt. Progress goes to log.
func BuildImage(ctx context.Context, e Builder, agent string, version string, log io.Writer) (ref string, err error) {
	return buildImage(ctx, e, agent, version, Base{}, log)
}

// BuildImageOn builds the image of an agent's CLI at a pinned version ("" for the default)
// on base, an environment's image, and returns its reference
// skillgate/AGENT:VERSION-on-KEY12, KEY12 covering the layered Dockerfile and the base's
// ID, found without unpacking the CLI when the engine has it. Only the CLI's files and the
// agent's folders (/home/agent, /workspace) are added; the shell, libraries and users are
// the base's. A dynamically linked CLI (Claude Code) needs the base to have glibc. The npm
// tarballs are cached as BuildImage caches them.
func BuildImageOn(ctx context.Context, e Builder, agent string, version string, base Base, log io.Writer) (ref string, err error) {
	if base.Ref == "" || base.ID == "" {
		return "", fmt.Errorf("build %s image: no base image", agent)
	}
	// As VERSION names the image FROM scratch, the alias names this one without
	// unpacking the CLI to digest its context again.
	alias, err := layeredAlias(agent, version, base)
	if err != nil {
		return "", err
	}
	if _, ok, err := e.ImageExists(ctx, alias); err != nil || ok {
		return alias, err
	}
	ref, err = buildImage(ctx, e, agent, version, base, log)
	if err != nil {
		return "", err
	}
	if err := e.Tag(ctx, ref, alias); err != nil {
		return "", err
	}
	return alias, nil
}

// layeredAlias is the tag that names an agent's CLI at version on base:
// skillgate/AGENT:VERSION-on-KEY12, KEY covering the layered Dockerfile and the base's ID.
func layeredAlias(agent, version string, base Base) (string, error) {
	r := Of(agent).recipe
	if r == nil {
		return "", fmt.Errorf("build agent image: unknown agent %q (want one of %s)", agent, strings.Join(ImageKinds(), ", "))
	}
	if version == "" {
		version = r.version
	}
	key := digest.FromString(fmt.Sprintf(layeredDockerfile, base.ID, r.env))
	return ImageRepo(agent) + ":" + strings.ReplaceAll(version, "+", "_") + "-on-" + key.Encoded()[:12], nil
}

func buildImage(ctx context.Context, e Builder, agent string, version string, base Base, log io.Writer) (ref string, err error) {
	if log == nil {
		log = io.Discard
	}
	r := Of(agent).recipe
	if r == nil {
		return "", fmt.Errorf("build agent image: unknown agent %q (want one of %s)", agent, strings.Join(ImageKinds(), ", "))
	}
	if version == "" {
		version = r.version
	}
	if !exactVersion.MatchString(version) {
		return "", fmt.Errorf("build %s image: version %q is not an exact version (see npm view %s versions)", agent, version, r.pkg)
	}
	layered := base.Ref != ""
	if !layered {
		if err := backend.CheckStatic(backend.BusyboxPath); err != nil {
			return "", fmt.Errorf("build %s image: needs a static busybox at %s: %w; install one with `apt-get install busybox-static`", agent, backend.BusyboxPath, err)
		}
		if err := backend.CheckStatic(bashStaticPath); err != nil {
			return "", fmt.Errorf("build %s image: needs a static bash at %s: %w; install it with `apt-get install bash-static`", agent, bashStaticPath, err)
		}
	}
	cache, err := NpmCacheDir()
	if err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
	}

	tmp, err := os.MkdirTemp("", "skillgate-agent-")
	if err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
	}
	defer os.RemoveAll(tmp)

	bc := backend.NewBuildContext(fmt.Sprintf(agentDockerfile, r.env))
	if layered {
		bc = backend.NewBuildContext(fmt.Sprintf(layeredDockerfile, base.Ref, r.env))
		bc.AddDir("home", 0o755, 0, 0)
		bc.AddDir("home/agent", 0o755, 1000, 1000)
		bc.AddDir("workspace", 0o755, 1000, 1000)
	} else if err := agentBase(bc); err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
	}
	if r.node != nil {
		if version != r.version {
			return "", fmt.Errorf("build %s image: version %s is not the one its lockfile pins (%s)", agent, version, r.version)
		}
		err = addNodeApp(ctx, bc, cache, r, layered, log)
	} else {
		err = addNativeCLI(ctx, bc, cache, tmp, r, version, layered, log)
	}
	if err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
	}
	for p, target := range r.links {
		bc.AddSymlink(p, target, 0, 0)
	}
	for _, x := range r.extras {
		if err := addExtra(ctx, bc, cache, tmp, x, layered, log); err != nil {
			return "", fmt.Errorf("build %s image: %w", agent, err)
		}
	}

	fmt.Fprintf(log, "hashing the build context\n")
	d, err := bc.Digest()
	if err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
	}
	tag := strings.ReplaceAll(version, "+", "_")
	ref = ImageRepo(agent) + ":" + tag + "-" + d.Encoded()[:12]
	if layered {
		// The context names the base by reference; its ID says what it is.
		ref = ImageRepo(agent) + ":" + tag + "-" + d.Encoded()[:12] + "-on-" + digest.Digest(base.ID).Encoded()[:12]
	}
	if _, ok, err := e.ImageExists(ctx, ref); err != nil {
		return "", err
	} else if ok {
		fmt.Fprintf(log, "%s is up to date\n", ref)
	} else {
		fmt.Fprintf(log, "building %s\n", ref)
		t1 := time.Now()
		labels := map[string]string{backend.LabelImage: "agent", backend.LabelAgent: agent, backend.LabelAgentVersion: version}
		if _, err := e.BuildImage(ctx, ref, labels, bc); err != nil {
			return "", err
		}
		fmt.Fprintf(log, "built %s in %s\n", ref, time.Since(t1).Round(100*time.Millisecond))
	}
	if layered {
		return ref, nil // VERSION alone names the image FROM scratch
	}
	if err := e.Tag(ctx, ref, ImageRepo(agent)+":"+tag); err != nil {
		return "", err
	}
	return ref, nil
}

// addNativeCLI adds an agent's native binary to the image from the platform package its
// npm package names, with the host libraries each ELF file of it needs when the image is
// built FROM scratch.
func addNativeCLI(ctx context.Context, bc *backend.BuildContext, cache, tmp string, r *recipe, version string, layered bool, log io.Writer) error {
	main, err := npmFetch(ctx, cache, r.pkg, version, log)
	if err != nil {
		return err
	}
	pj, err := tgzPackageJSON(main)
	if err != nil {
		return fmt.Errorf("%s: %w", main, err)
	}
	pkg, ver, err := platformDependency(pj, r.platform)
	if err != nil {
		return fmt.Errorf("%s@%s: %w", r.pkg, version, err)
	}
	plat, err := npmFetch(ctx, cache, pkg, ver, log)
	if err != nil {
		return err
	}
	t0 := time.Now()
	files, err := extractTgz(plat, r.dir, r.skip, tmp)
	if err != nil {
		return fmt.Errorf("%s: %w", plat, err)
	}
	fmt.Fprintf(log, "unpacked %d files of %s@%s in %s\n", len(files), pkg, ver, time.Since(t0).Round(100*time.Millisecond))
	if _, ok := files[r.bin]; !ok {
		return fmt.Errorf("%s@%s has no %s", pkg, ver, path.Join(r.dir, r.bin))
	}
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	nlibs := 0
	for _, rel := range rels {
		p := path.Join(r.dest, rel)
		addParents(bc, p)
		bc.AddHostFile(p, files[rel], 0, 0)
		// Every ELF file of the package gets the libraries it needs.
		if layered {
			continue // the base's own libraries serve
		}
		libs, interp, err := hostLibraries(files[rel])
		if err != nil {
			return fmt.Errorf("%s: %w", path.Join(r.dir, rel), err)
		}
		if interp != "" {
			if err := addLibraries(bc, libs, interp); err != nil {
				return err
			}
			nlibs += len(libs)
		}
	}
	if nlibs > 0 {
		fmt.Fprintf(log, "added %d host libraries for dynamically linked binaries\n", nlibs)
	}
	return nil
}

// addExtra adds one file of another npm package to the image, with the host libraries
// it needs when it is dynamically linked and the image is built FROM scratch.
func addExtra(ctx context.Context, bc *backend.BuildContext, cache, tmp string, x extraFile, layered bool, log io.Writer) error {
	tgz, err := npmFetch(ctx, cache, x.pkg, x.version, log)
	if err != nil {
		return err
	}
	out := filepath.Join(tmp, "extra-"+strings.ReplaceAll(x.dest, "/", "_"))
	files, err := extractTgz(tgz, x.file, nil, out)
	if err != nil {
		return fmt.Errorf("%s: %w", tgz, err)
	}
	host, ok := files[""]
	if !ok {
		return fmt.Errorf("%s@%s has no %s", x.pkg, x.version, x.file)
	}
	addParents(bc, x.dest)
	bc.AddHostFile(x.dest, host, 0, 0)
	if layered {
		return nil
	}
	libs, interp, err := hostLibraries(host)
	if err != nil || interp == "" {
		return err
	}
	return addLibraries(bc, libs, interp)
}

// agentBase adds what every agent image has besides the agent: busybox and its applets,
// bash, the C.utf8 locale, the users and the folders.
func agentBase(bc *backend.BuildContext) error {
	bc.AddDir("bin", 0o755, 0, 0)
	bc.AddHostFile("bin/busybox", backend.BusyboxPath, 0, 0)
	for _, a := range append(append([]string{}, backend.SandboxApplets...), agentApplets...) {
		bc.AddSymlink("bin/"+a, "busybox", 0, 0)
	}
	bc.AddHostFile("bin/bash", bashStaticPath, 0, 0)
	bc.AddSymlink("bin/bash-static", "bash", 0, 0)
	for _, d := range []string{"usr", "usr/bin", "usr/lib", "usr/lib/locale", "usr/local", "usr/local/bin", "usr/local/lib", "etc"} {
		bc.AddDir(d, 0o755, 0, 0)
	}
	// For scripts that start with #!/usr/bin/env or #!/usr/bin/bash.
	bc.AddSymlink("usr/bin/env", "../../bin/busybox", 0, 0)
	bc.AddSymlink("usr/bin/bash", "../../bin/bash", 0, 0)
	if fi, err := os.Stat(localeDir); err == nil && fi.IsDir() {
		if err := bc.AddHostTree("usr/lib/locale/C.utf8", localeDir, 0, 0); err != nil {
			return err
		}
	}
	backend.AddUserland(bc, "/bin/bash")
	return bc.Err()
}

// addParents adds the folders above image path p (root-owned, 0755; adding one twice is
// harmless).
func addParents(bc *backend.BuildContext, p string) {
	var dirs []string
	for d := path.Dir(strings.TrimPrefix(p, "/")); d != "." && d != "/"; d = path.Dir(d) {
		dirs = append(dirs, d)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		bc.AddDir(dirs[i], 0o755, 0, 0)
	}
}

// isELF reports whether the file starts with the ELF magic.
func isELF(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false, nil
	}
	return string(magic[:]) == elf.ELFMAG, nil
}

// hostLibraries reports the loader (PT_INTERP) of an ELF file and the host paths of the
// shared libraries it needs, transitively (DT_NEEDED), by name. A file that is not ELF,
// or has no loader, needs nothing.
func hostLibraries(p string) (libs map[string]string, interp string, err error) {
	if ok, err := isELF(p); !ok || err != nil {
		return nil, "", err
	}
	f, err := elf.Open(p)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			b, err := io.ReadAll(prog.Open())
			if err != nil {
				return nil, "", fmt.Errorf("read its loader: %w", err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		return nil, "", nil
	}
	if f.Machine != elf.EM_X86_64 {
		return nil, "", fmt.Errorf("dynamically linked for %s, not x86-64", f.Machine)
	}
	if _, err := os.Stat(interp); err != nil {
		return nil, "", fmt.Errorf("its loader %s is not on this host (is it built for another libc?)", interp)
	}
	libs = map[string]string{}
	queue, err := f.ImportedLibraries()
	if err != nil {
		return nil, "", err
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if _, ok := libs[name]; ok {
			continue
		}
		host := ""
		for _, d := range libDirs {
			if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode().IsRegular() {
				host = filepath.Join(d, name)
				break
			}
		}
		if host == "" {
			return nil, "", fmt.Errorf("needs %s, which is not in %s", name, strings.Join(libDirs, ", "))
		}
		libs[name] = host
		lf, err := elf.Open(host)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", host, err)
		}
		more, err := lf.ImportedLibraries()
		lf.Close()
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", host, err)
		}
		queue = append(queue, more...)
	}
	return libs, interp, nil
}

// addLibraries adds shared libraries to the image's library folder, and the loader at
// its path: a link to the library folder's copy when that has it, else a copy.
func addLibraries(bc *backend.BuildContext, libs map[string]string, interp string) error {
	addParents(bc, imageLibDir+"/x")
	for name, host := range libs {
		bc.AddHostFile(imageLibDir+"/"+name, host, 0, 0)
	}
	ip, err := backend.ImagePath(interp)
	if err != nil {
		return fmt.Errorf("loader %s: %w", interp, err)
	}
	if path.Dir(ip) == imageLibDir {
		if _, ok := libs[path.Base(ip)]; !ok {
			bc.AddHostFile(ip, interp, 0, 0)
		}
		return nil
	}
	addParents(bc, ip)
	if _, ok := libs[path.Base(ip)]; ok {
		rel := strings.Repeat("../", strings.Count(path.Dir(ip), "/")+1) + imageLibDir + "/" + path.Base(ip)
		bc.AddSymlink(ip, rel, 0, 0)
		return nil
	}
	bc.AddHostFile(ip, interp, 0, 0)
	return nil
}
