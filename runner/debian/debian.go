// Package debian builds skillgate's Debian userland: a minimal root made on the host by
// debootstrap from Debian's own packages, from the host's Debian mirror, with the user the
// cells run as, ready for `docker import`. No image registry is involved and the engine
// needs no network: the packages are fetched on the host, and everything layered on the
// imported image later is copied in with networking off.
//
// It runs host programs (debootstrap, tar) and imports neither the Docker SDK nor any
// package of pipeline; runner imports the root it makes.
package debian

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/opencontainers/go-digest"
)

// BasePackages are in every root, beside debootstrap's minbase variant.
var BasePackages = []string{"bash", "ca-certificates", "coreutils", "git"}

// recipe versions how a root is made from its inputs: a change to the steps below that
// changes the root changes it, and so every key.
const recipe = 1

// Repo is the repository of the imported roots.
const Repo = "skillgate/debian"

// The user cells run as, as the roots create it.
const (
	agentUID  = 1000
	agentHome = "/home/agent"
	workspace = "/workspace"
)

// ImageChanges are the configuration every imported root gets.
var ImageChanges = []string{
	"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"ENV LANG=C.UTF-8",
	"USER 1000:1000",
	"WORKDIR " + workspace,
	`CMD ["/bin/bash"]`,
}

// Root is one Debian root to build: a release, the extra packages beside
// BasePackages, and the mirror they come from.
type Root struct {
	Release  string
	Packages []string
	Mirror   string
}

// NewRoot is the root of release with the extra packages (sorted, each once, the base's
// left out) from mirror.
func NewRoot(release string, packages []string, mirror string) Root {
	var extra []string
	for _, p := range packages {
		if !slices.Contains(BasePackages, p) {
			extra = append(extra, p)
		}
	}
	slices.Sort(extra)
	return Root{Release: release, Packages: slices.Compact(extra), Mirror: strings.TrimRight(mirror, "/")}
}

// Key digests all a root is built from.
func (r Root) Key() digest.Digest {
	return digest.FromString(fmt.Sprintf("recipe %d\nrelease %s\nmirror %s\nbase %s\nextra %s\n",
		recipe, r.Release, r.Mirror, strings.Join(BasePackages, " "), strings.Join(r.Packages, " ")))
}

// Tag is the image tag of the root: skillgate/debian:RELEASE-KEY12.
func (r Root) Tag() string { return Repo + ":" + r.Release + "-" + r.Key().Encoded()[:12] }

// NameTag is the name a Dockerfile may give the root with no extra packages:
// skillgate/debian:RELEASE.
func NameTag(release string) string { return Repo + ":" + release }

// Includes is the --include list of debootstrap.
func (r Root) Includes() []string {
	return append(slices.Clone(BasePackages), r.Packages...)
}

// sourcesFile is where a Debian host lists its mirrors (deb822).
const sourcesFile = "/etc/apt/sources.list.d/debian.sources"

// MirrorEnv names the variable that overrides the host's mirror.
const MirrorEnv = "SKILLGATE_DEBIAN_MIRROR"

// HostMirror is the Debian mirror of this host: $SKILLGATE_DEBIAN_MIRROR, else the URIs of
// the first stanza of /etc/apt/sources.list.d/debian.sources that serves release itself
// (not -updates or -security).
func HostMirror(release string) (string, error) {
	if m := os.Getenv(MirrorEnv); m != "" {
		return m, nil
	}
	b, err := os.ReadFile(sourcesFile)
	if err != nil {
		return "", fmt.Errorf("find the Debian mirror: %w (set %s to a mirror URL)", err, MirrorEnv)
	}
	return mirrorOf(string(b), release, sourcesFile)
}

// mirrorOf reads a deb822 sources list.
func mirrorOf(sources, release, file string) (string, error) {
	for _, stanza := range strings.Split(sources, "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(strings.TrimSpace(line), "#") {
				fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		if fields["Enabled"] == "no" || !slices.Contains(strings.Fields(fields["Types"]), "deb") {
			continue
		}
		if !slices.Contains(strings.Fields(fields["Suites"]), release) {
			continue
		}
		if uris := strings.Fields(fields["URIs"]); len(uris) > 0 {
			return uris[0], nil
		}
	}
	return "", fmt.Errorf("find the Debian mirror: %s lists none for %s (set %s to a mirror URL)", file, release, MirrorEnv)
}

// CacheDir is where debootstrap keeps the packages it fetched, so that a root with other
// packages fetches only what it adds: USERCACHE/skillgate/debian.
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("debian cache: %w", err)
	}
	return filepath.Join(base, "skillgate", "debian"), nil
}

// Lock holds the build of key across processes, so two runs that need the same root
// build it once: the second finds the image the first imported. It waits until ctx ends.
func Lock(ctx context.Context, key digest.Digest) (unlock func(), err error) {
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, fmt.Errorf("lock debian build: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(cache, key.Encoded()[:16]+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock debian build: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock debian build: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock debian build: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Bootstrap makes the root in a fresh folder: debootstrap's minbase with BasePackages and
// the root's packages, then the user agent (1000:1000, home /home/agent, shell bash) and
// /workspace it owns, without the downloaded package files and package lists. remove
// deletes the folder, once nothing is mounted below it. It needs root.
func Bootstrap(ctx context.Context, r Root, log io.Writer) (dir string, remove func() error, err error) {
	if os.Geteuid() != 0 {
		return "", nil, fmt.Errorf("build Debian root %s: debootstrap needs root; run skillgate as root once to build %s", r.Release, r.Tag())
	}
	prog, err := exec.LookPath("debootstrap")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/debootstrap"); serr != nil {
			return "", nil, fmt.Errorf("build Debian root %s: debootstrap not found; install it with `apt-get install debootstrap`", r.Release)
		}
		prog = "/usr/sbin/debootstrap"
	}
	cache, err := CacheDir()
	if err != nil {
		return "", nil, err
	}
	debs := filepath.Join(cache, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return "", nil, fmt.Errorf("build Debian root %s: %w", r.Release, err)
	}
	tmp, err := os.MkdirTemp(cache, "root-")
	if err != nil {
		return "", nil, fmt.Errorf("build Debian root %s: %w", r.Release, err)
	}
	remove = func() error { return removeRoot(tmp) }
	dir = filepath.Join(tmp, "root")
	args := []string{"--variant=minbase", "--include=" + strings.Join(r.Includes(), ","), "--cache-dir=" + debs, r.Release, dir, r.Mirror}
	fmt.Fprintf(log, "bootstrapping Debian %s from %s with %s\n", r.Release, r.Mirror, strings.Join(r.Includes(), " "))
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, prog, args...)
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// debootstrap's own environment, with a PATH that has the system folders it needs.
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive"}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		rerr := remove()
		return "", nil, errors.Join(fmt.Errorf("build Debian root %s: debootstrap %s: %w\n%s", r.Release, strings.Join(args, " "), err, out.tail()), rerr)
	}
	fmt.Fprintf(log, "bootstrapped Debian %s in %s\n", r.Release, time.Since(t0).Round(time.Second))
	if err := finish(dir); err != nil {
		rerr := remove()
		return "", nil, errors.Join(fmt.Errorf("build Debian root %s: %w", r.Release, err), rerr)
	}
	return dir, remove, nil
}

// finish adds the user the cells run as and drops what only the bootstrap needed.
func finish(dir string) error {
	passwd := filepath.Join(dir, "etc", "passwd")
	b, err := os.ReadFile(passwd)
	if err != nil {
		return err
	}
	if !hasID(string(b), agentUID) {
		if err := appendLine(passwd, fmt.Sprintf("agent:x:%d:%d:agent:%s:/bin/bash", agentUID, agentUID, agentHome)); err != nil {
			return err
		}
	}
	group := filepath.Join(dir, "etc", "group")
	if b, err = os.ReadFile(group); err != nil {
		return err
	}
	if !hasID(string(b), agentUID) {
		if err := appendLine(group, fmt.Sprintf("agent:x:%d:", agentUID)); err != nil {
			return err
		}
	}
	for _, d := range []string{agentHome, workspace} {
		p := filepath.Join(dir, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
		if err := os.Chown(p, agentUID, agentUID); err != nil {
			return err
		}
	}
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*_*", "var/log/*.log"} {
		ms, _ := filepath.Glob(filepath.Join(dir, glob))
		for _, m := range ms {
			if err := os.Remove(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// hasID reports whether a passwd or group file has an entry with the numeric id.
func hasID(file string, id int) bool {
	for _, line := range strings.Split(file, "\n") {
		f := strings.Split(line, ":")
		if len(f) > 2 && f[2] == fmt.Sprint(id) {
			return true
		}
	}
	return false
}

func appendLine(file, line string) error {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeRoot deletes a bootstrap folder. debootstrap mounts /proc and /sys inside the root
// while it works and unmounts them at its end; one killed midway may leave them, and
// deleting through a mounted /proc or /sys would reach the host's: every mount below the
// folder is detached first, and nothing is deleted while one stays.
func removeRoot(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return fmt.Errorf("remove Debian root %s: %w", dir, err)
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("remove Debian root %s: unmount %s: %w (left in place)", dir, mounts[i], err)
		}
	}
	if mounts, err = mountsUnder(dir); err != nil || len(mounts) > 0 {
		return fmt.Errorf("remove Debian root %s: %s still mounted (left in place)", dir, strings.Join(mounts, ", "))
	}
	return os.RemoveAll(dir)
}

// mountsUnder lists the mount points at or below dir, shallowest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var n int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &n); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Tar streams the root as a tar (numeric owners, as the root has them) into w.
func Tar(ctx context.Context, dir string, w io.Writer) error {
	cmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "-C", dir, "-cf", "-", ".")
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("tar Debian root: %w\n%s", err, stderr.tail())
	}
	return nil
}

// tailBuffer keeps the last 16 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 16<<10 {
		t.b = t.b[len(t.b)-16<<10:]
	}
	return len(p), nil
}

// tail is the last 20 lines.
func (t *tailBuffer) tail() string {
	lines := bytes.Split(bytes.TrimSpace(t.b), []byte("\n"))
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
