package agent

import (
	"context"
	"embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillgate/skillgate/runner/backend"

	"github.com/opencontainers/go-digest"
)

// nodeLocks are the npm lockfiles of the agents that run on Node.js, one folder each
// (package.json and package-lock.json): every package of the CLI's tree pinned by
// version and integrity, so its image is the same tree on every machine.
//
//go:embed pi/package.json pi/package-lock.json gemini/package.json gemini/package-lock.json
var nodeLocks embed.FS

// nodeApp is an agent CLI written for Node.js: its npm tree, installed from a lockfile,
// and the host's node binary with the libraries it needs.
type nodeApp struct {
	lock string // the folder of nodeLocks
	// main is the CLI's script in the tree, which /usr/local/bin/BIN links to.
	main, bin string
	// omitOptional leaves the tree's optional dependencies out (the Gemini
	// CLI's native terminal and keychain modules, which a headless run does
	// without).
	omitOptional bool
}

// nodeTreeCache is the folder of the installed tree of lock in cache:
// tree-LOCKDIGEST12, LOCKDIGEST covering the lock's two files.
func nodeTreeKey(lock string) (string, map[string][]byte, error) {
	files := map[string][]byte{}
	h := digest.SHA256.Digester()
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := nodeLocks.ReadFile(path.Join(lock, name))
		if err != nil {
			return "", nil, err
		}
		files[name] = b
		fmt.Fprintf(h.Hash(), "%s %d\n", name, len(b))
		h.Hash().Write(b)
	}
	return "tree-" + lock + "-" + h.Digest().Encoded()[:12], files, nil
}

// npmInstall returns the folder holding node_modules of the lock's tree, installing it
// with `npm ci` (no install scripts, no dev dependencies) into the cache first when it is
// not there. The tree lands under a temporary name and is renamed once complete, so the
// cache never holds a partial one.
func npmInstall(ctx context.Context, cache string, app *nodeApp, log io.Writer) (string, error) {
	lock := app.lock
	key, files, err := nodeTreeKey(lock)
	if err != nil {
		return "", fmt.Errorf("install %s: %w", lock, err)
	}
	dst := filepath.Join(cache, key)
	if fi, err := os.Stat(filepath.Join(dst, "node_modules")); err == nil && fi.IsDir() {
		fmt.Fprintf(log, "using the %s tree (cached)\n", lock)
		return dst, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("install %s: npm not found; install Node.js and npm (apt-get install npm)", lock)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("install %s: %w", lock, err)
	}
	tmp, err := os.MkdirTemp(cache, ".install-")
	if err != nil {
		return "", fmt.Errorf("install %s: %w", lock, err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return "", fmt.Errorf("install %s: %w", lock, err)
		}
	}
	fmt.Fprintf(log, "installing the %s tree with npm ci\n", lock)
	t0 := time.Now()
	args := []string{"ci", "--ignore-scripts", "--omit=dev", "--no-audit", "--no-fund", "--cache", filepath.Join(tmp, ".npm-cache")}
	if app.omitOptional {
		args = append(args, "--omit=optional")
	}
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = tmp
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := out.String()
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		return "", fmt.Errorf("install %s: npm ci: %w\n%s", lock, err, msg)
	}
	if err := os.RemoveAll(filepath.Join(tmp, ".npm-cache")); err != nil {
		return "", fmt.Errorf("install %s: %w", lock, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", fmt.Errorf("install %s: %w", lock, err)
	}
	fmt.Fprintf(log, "installed the %s tree in %s\n", lock, time.Since(t0).Round(100*time.Millisecond))
	return dst, nil
}

// addNodeApp adds a Node.js CLI to the image: its installed tree at dest, the host's
// node (with its libraries, FROM scratch), and /usr/local/bin links to both.
func addNodeApp(ctx context.Context, bc *backend.BuildContext, cache string, r *recipe, layered bool, log io.Writer) error {
	app := r.node
	tree, err := npmInstall(ctx, cache, app, log)
	if err != nil {
		return err
	}
	if err := bc.AddHostTree(r.dest, tree, 0, 0); err != nil {
		return err
	}
	bc.AddSymlink("usr/local/bin/"+app.bin, "../../../"+path.Join(r.dest, app.main), 0, 0)
	if layered {
		return nil // the base brings its own node
	}
	node, err := exec.LookPath("node")
	if err == nil {
		node, err = filepath.EvalSymlinks(node)
	}
	if err != nil {
		return fmt.Errorf("find node: %w; install Node.js (apt-get install nodejs)", err)
	}
	bc.AddHostFile("usr/local/bin/node", node, 0, 0)
	libs, interp, err := hostLibraries(node)
	if err != nil || interp == "" {
		return err
	}
	return addLibraries(bc, libs, interp)
}
