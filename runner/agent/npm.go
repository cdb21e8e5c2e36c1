package agent

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// exactVersion is a pinned npm version: no ranges, no dist-tags.
var exactVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

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

// packageJSON is the part of an npm package.json that BuildImage reads.
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
