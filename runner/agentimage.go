package runner

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Agent CLI versions built by default: the ones the samples in
// ../shared/samples/agent-transcripts came from.
const (
	ClaudeCodeVersion = "2.1.332"
	CodexVersion      = "0.171.0"
)

// Agents whose images BuildAgentImage builds.
const (
	AgentClaudeCode = "claude-code"
	AgentCodex      = "codex"
)

// Labels of an agent image besides LabelImage=agent.
const (
	LabelAgent        = "dev.skillgate.agent"
	LabelAgentVersion = "dev.skillgate.agent-version"
)

// agentRecipe says where an agent's native binary is in its npm packages and where it
// goes in the image.
type agentRecipe struct {
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
}

var agentRecipes = map[string]agentRecipe{
	AgentClaudeCode: {
		pkg:      "@anthropic-ai/claude-code",
		platform: "@anthropic-ai/claude-code-linux-x64",
		dir:      "claude", dest: "usr/local/bin/claude", bin: "", // a file
		env:     " DISABLE_AUTOUPDATER=1",
		version: ClaudeCodeVersion,
	},
	AgentCodex: {
		// The binary finds its helpers (codex-path/rg, codex-resources/bwrap,
		// codex-package.json) next to its real path, so the whole folder is kept and
		// /usr/local/bin/codex links to it. The voice helper and its GStreamer libraries
		// are left out: a headless run has no audio.
		pkg:      "@openai/codex",
		platform: "@openai/codex-linux-x64",
		dir:      "vendor/x86_64-unknown-linux-musl", dest: "usr/local/lib/codex", bin: "bin/codex",
		skip:    []string{"codex-resources/voice/"},
		links:   map[string]string{"usr/local/bin/codex": "../lib/codex/bin/codex", "usr/local/bin/rg": "../lib/codex/codex-path/rg"},
		version: CodexVersion,
	},
}

// AgentVersion is the default version of an agent's CLI, or "" for an unknown agent.
func AgentVersion(agent string) string { return agentRecipes[agent].version }

// AgentImageRepo is the repository of an agent's images: skillgate/AGENT.
func AgentImageRepo(agent string) string { return "skillgate/" + agent }

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
ADD ` + LayerTar + ` /
ENV PATH=/usr/local/bin:/bin HOME=/home/agent USER=agent LANG=C.UTF-8 SHELL=/bin/bash%s
USER 1000:1000
WORKDIR /workspace
CMD ["/bin/bash"]
`

// exactVersion is a pinned npm version: no ranges, no dist-tags.
var exactVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// BuildAgentImage builds the image of an agent's CLI ("claude-code" or "codex") at a pinned
// version ("" for the default) from its official npm packages, and returns its reference
// skillgate/AGENT:VERSION-DIGEST12, also tagged skillgate/AGENT:VERSION. The image is built
// FROM scratch with networking off: the native binary, the shared libraries it needs from
// the host (if it has a dynamic loader), the host's static busybox and bash-static, the
// C.utf8 locale, and a user agent (1000:1000) owning /home/agent and /workspace. The npm
// tarballs are cached under the user cache folder (skillgate/npm); an image whose
// build context is unchanged is not rebuilt. Progress goes to log.
func (e *Engine) BuildAgentImage(ctx context.Context, agent string, version string, log io.Writer) (ref string, err error) {
	if log == nil {
		log = io.Discard
	}
	r, ok := agentRecipes[agent]
	if !ok {
		return "", fmt.Errorf("build agent image: unknown agent %q (want %s or %s)", agent, AgentClaudeCode, AgentCodex)
	}
	if version == "" {
		version = r.version
	}
	if !exactVersion.MatchString(version) {
		return "", fmt.Errorf("build %s image: version %q is not an exact version (see npm view %s versions)", agent, version, r.pkg)
	}
	if err := checkStatic(busyboxPath); err != nil {
		return "", fmt.Errorf("build %s image: needs a static busybox at %s: %w; install one with `apt-get install busybox-static`", agent, busyboxPath, err)
	}
	if err := checkStatic(bashStaticPath); err != nil {
		return "", fmt.Errorf("build %s image: needs a static bash at %s: %w; install it with `apt-get install bash-static`", agent, bashStaticPath, err)
	}
	cache, err := NpmCacheDir()
	if err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
	}

	main, err := npmFetch(ctx, cache, r.pkg, version, log)
	if err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
	}
	pj, err := tgzPackageJSON(main)
	if err != nil {
		return "", fmt.Errorf("build %s image: %s: %w", agent, main, err)
	}
	pkg, ver, err := platformDependency(pj, r.platform)
	if err != nil {
		return "", fmt.Errorf("build %s image: %s@%s: %w", agent, r.pkg, version, err)
	}
	plat, err := npmFetch(ctx, cache, pkg, ver, log)
	if err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
	}

	tmp, err := os.MkdirTemp("", "skillgate-agent-")
	if err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
	}
	defer os.RemoveAll(tmp)
	t0 := time.Now()
	files, err := extractTgz(plat, r.dir, r.skip, tmp)
	if err != nil {
		return "", fmt.Errorf("build %s image: %s: %w", agent, plat, err)
	}
	fmt.Fprintf(log, "unpacked %d files of %s@%s in %s\n", len(files), pkg, ver, time.Since(t0).Round(100*time.Millisecond))
	if _, ok := files[r.bin]; !ok {
		return "", fmt.Errorf("build %s image: %s@%s has no %s", agent, pkg, ver, path.Join(r.dir, r.bin))
	}

	bc := NewBuildContext(fmt.Sprintf(agentDockerfile, r.env))
	if err := agentBase(bc); err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
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
		libs, interp, err := hostLibraries(files[rel])
		if err != nil {
			return "", fmt.Errorf("build %s image: %s: %w", agent, path.Join(r.dir, rel), err)
		}
		if interp != "" {
			if err := addLibraries(bc, libs, interp); err != nil {
				return "", fmt.Errorf("build %s image: %w", agent, err)
			}
			nlibs += len(libs)
		}
	}
	for p, target := range r.links {
		bc.AddSymlink(p, target, 0, 0)
	}
	if nlibs > 0 {
		fmt.Fprintf(log, "added %d host libraries for dynamically linked binaries\n", nlibs)
	}

	fmt.Fprintf(log, "hashing the build context\n")
	d, err := bc.Digest()
	if err != nil {
		return "", fmt.Errorf("build %s image: %w", agent, err)
	}
	tag := strings.ReplaceAll(version, "+", "_")
	ref = AgentImageRepo(agent) + ":" + tag + "-" + d.Encoded()[:12]
	if _, ok, err := e.ImageExists(ctx, ref); err != nil {
		return "", err
	} else if ok {
		fmt.Fprintf(log, "%s is up to date\n", ref)
	} else {
		fmt.Fprintf(log, "building %s\n", ref)
		t1 := time.Now()
		labels := map[string]string{LabelImage: "agent", LabelAgent: agent, LabelAgentVersion: version}
		if _, err := e.BuildImage(ctx, ref, labels, bc); err != nil {
			return "", err
		}
		fmt.Fprintf(log, "built %s in %s\n", ref, time.Since(t1).Round(100*time.Millisecond))
	}
	if err := e.tag(ctx, ref, AgentImageRepo(agent)+":"+tag); err != nil {
		return "", err
	}
	return ref, nil
}

// agentBase adds what every agent image has besides the agent: busybox and its applets,
// bash, the C.utf8 locale, the users and the folders.
func agentBase(bc *BuildContext) error {
	bc.AddDir("bin", 0o755, 0, 0)
	bc.AddHostFile("bin/busybox", busyboxPath, 0, 0)
	for _, a := range append(append([]string{}, sandboxApplets...), agentApplets...) {
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
	addUserland(bc, "/bin/bash")
	return bc.err
}

// NpmCacheDir is where npm tarballs are kept: USERCACHE/skillgate/npm.
func NpmCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("npm cache: %w", err)
	}
	return filepath.Join(base, "skillgate", "npm"), nil
}

// npmFetch returns the path of pkg@version's tarball in cache, fetching it with `npm pack`
// first if it is not there. The tarball lands under a temporary name and is renamed once
// checked, so the cache never holds a partial one.
func npmFetch(ctx context.Context, cache, pkg, version string, log io.Writer) (string, error) {
	spec := pkg + "@" + version
	dst := filepath.Join(cache, strings.ReplaceAll(strings.TrimPrefix(spec, "@"), "/", "__")+".tgz")
	if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		fmt.Fprintf(log, "using %s (cached, %d MB)\n", spec, fi.Size()>>20)
		return dst, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("fetch %s: npm not found; install Node.js and npm (apt-get install npm)", spec)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("fetch %s: %w", spec, err)
	}
	tmp, err := os.MkdirTemp(cache, ".pack-")
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", spec, err)
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(log, "fetching %s with npm pack\n", spec)
	t0 := time.Now()
	// A private npm cache: the tarball is kept here, not twice.
	cmd := exec.CommandContext(ctx, npm, "pack", "--json", "--ignore-scripts",
		"--cache", filepath.Join(tmp, "npm-cache"), "--pack-destination", tmp, spec)
	cmd.Dir = tmp
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// npm's debug log is in the private cache, which is about to go.
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			if !strings.Contains(l, "A complete log of this run") {
				lines = append(lines, l)
			}
		}
		msg := strings.Join(lines, "\n")
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		return "", fmt.Errorf("fetch %s: npm pack: %w\n%s", spec, err, msg)
	}
	var packed []struct {
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &packed); err != nil || len(packed) != 1 || packed[0].Filename == "" {
		return "", fmt.Errorf("fetch %s: unexpected npm pack output %q", spec, stdout.String())
	}
	got := filepath.Join(tmp, filepath.Base(packed[0].Filename))
	pj, err := tgzPackageJSON(got)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", spec, err)
	}
	if pj.Name != pkg || pj.Version != version {
		return "", fmt.Errorf("fetch %s: npm gave %s@%s", spec, pj.Name, pj.Version)
	}
	if err := os.Rename(got, dst); err != nil {
		return "", fmt.Errorf("fetch %s: %w", spec, err)
	}
	fi, _ := os.Stat(dst)
	fmt.Fprintf(log, "fetched %s (%d MB) in %s\n", spec, fi.Size()>>20, time.Since(t0).Round(100*time.Millisecond))
	return dst, nil
}

// packageJSON is the part of an npm package.json that BuildAgentImage reads.
type packageJSON struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
}

// tgzPackageJSON reads package.json at the root of an npm tarball.
func tgzPackageJSON(tgz string) (*packageJSON, error) {
	var pj *packageJSON
	err := walkTgz(tgz, func(rel string, hdr *tar.Header, r io.Reader) (bool, error) {
		if rel != "package.json" {
			return false, nil
		}
		pj = &packageJSON{}
		if err := json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(pj); err != nil {
			return true, fmt.Errorf("package.json: %w", err)
		}
		return true, nil
	})
	if err == nil && pj == nil {
		err = errors.New("no package.json")
	}
	return pj, err
}

// platformDependency resolves an optional dependency to an exact package and version,
// following npm aliases ("npm:@openai/codex@0.171.0-linux-x64").
func platformDependency(pj *packageJSON, dep string) (pkg, version string, err error) {
	spec, ok := pj.OptionalDependencies[dep]
	if !ok {
		return "", "", fmt.Errorf("no optional dependency %s (the native binary's package)", dep)
	}
	pkg, version = dep, spec
	if alias, ok := strings.CutPrefix(spec, "npm:"); ok {
		i := strings.LastIndex(alias, "@")
		if i <= 0 {
			return "", "", fmt.Errorf("optional dependency %s: bad alias %q", dep, spec)
		}
		pkg, version = alias[:i], alias[i+1:]
	}
	if !exactVersion.MatchString(version) {
		return "", "", fmt.Errorf("optional dependency %s: %q is not an exact version", dep, spec)
	}
	return pkg, version, nil
}

// walkTgz calls f with each entry of a gzipped tar, named relative to its first path
// element (npm's "package/"), until f says it is done.
func walkTgz(tgz string, f func(rel string, hdr *tar.Header, r io.Reader) (done bool, err error)) error {
	file, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer file.Close()
	gz, err := gzip.NewReader(file)
	if err != nil {
		return err
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		_, rel, _ := strings.Cut(name, "/")
		done, err := f(rel, hdr, tr)
		if err != nil || done {
			return err
		}
	}
}

// extractTgz writes the regular files of an npm tarball below its folder dir (or the file
// dir itself), except those below a skip prefix, into out. It returns their host paths by
// path relative to dir ("" when dir is a file). The mode keeps only the executable bit.
func extractTgz(tgz, dir string, skip []string, out string) (map[string]string, error) {
	files := map[string]string{}
	err := walkTgz(tgz, func(rel string, hdr *tar.Header, r io.Reader) (bool, error) {
		if hdr.Typeflag != tar.TypeReg {
			return false, nil
		}
		var sub string
		switch {
		case rel == dir:
		case strings.HasPrefix(rel, dir+"/"):
			sub = rel[len(dir)+1:]
		default:
			return false, nil
		}
		for _, s := range skip {
			if strings.HasPrefix(sub, s) {
				return false, nil
			}
		}
		dst := filepath.Join(out, filepath.FromSlash(path.Base(dir)))
		if sub != "" {
			dst = filepath.Join(out, filepath.FromSlash(sub))
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return false, err
		}
		mode := os.FileMode(0o644)
		if hdr.Mode&0o111 != 0 {
			mode = 0o755
		}
		w, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if err != nil {
			return false, err
		}
		_, err = io.Copy(w, r)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		files[sub] = dst
		return false, err
	})
	return files, err
}

// addParents adds the folders above image path p (root-owned, 0755; adding one twice is
// harmless).
func addParents(bc *BuildContext, p string) {
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
func addLibraries(bc *BuildContext, libs map[string]string, interp string) error {
	addParents(bc, imageLibDir+"/x")
	for name, host := range libs {
		bc.AddHostFile(imageLibDir+"/"+name, host, 0, 0)
	}
	ip, err := imagePath(interp)
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
