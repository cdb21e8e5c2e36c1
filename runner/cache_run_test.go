package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skillgate/skillgate/runner/cache"
	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// sharedCacheSuite has four cells of agent true over its fixture fx.
const sharedCacheSuite = `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: %q
	agent: agents.command & {command: ["true"]}
	trials: 4
	arms: none: {}
	cases: c: {prompt: "c", fixture: "fx"}
	policy: policies.advisory
}
`

// sharedCacheRun is one process of TestTwoRunsShareCache: the suite
// compiled through the cache, as skillgate run compiles it, and run into
// its own folder.
func sharedCacheRun(t *testing.T, dir, out, cacheDir string) {
	plan.SetLiveHasher(cache.LiveHasher(cacheDir))
	defer plan.SetLiveHasher(nil)
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, dir))
	}
	sum, err := Run(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 2, Cache: cacheDir, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Complete() || sum.Ran != 4 {
		t.Fatalf("run into %s: %+v", out, sum)
	}
}

// TestTwoRunsShareCache: two processes run the same suite at once, each into
// its own fresh folder, through one machine cache, with real cells: both
// complete, the cache holds one snapshot of the fixture (made once, no
// leftovers), and each folder's snapshot is verified, every file in it a link
// to the cache's bytes.
func TestTwoRunsShareCache(t *testing.T) {
	if dir := os.Getenv("SHARED_CACHE_SUITE"); dir != "" {
		sharedCacheRun(t, dir, os.Getenv("SHARED_CACHE_OUT"), os.Getenv("SHARED_CACHE_DIR"))
		return
	}
	e := dockertest.Engine(t)
	name := "shared-cache-" + dockertest.RandomHex(t)
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+name) })
	dir := t.TempDir()
	mustDo(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(fmt.Sprintf(sharedCacheSuite, name)), 0o644))
	for i := 0; i < 2000; i++ {
		p := filepath.Join(dir, "fx", fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d", i))
		mustDo(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mustDo(t, os.WriteFile(p, []byte(fmt.Sprintf("file %d of %s\n", i, name)), 0o644))
	}
	// The images built first, by a run without the cache, so the two
	// processes race on the cache alone.
	sharedCacheRun(t, dir, t.TempDir(), t.TempDir())
	cacheDir := t.TempDir()
	os.RemoveAll(cacheDir)

	outs := []string{t.TempDir(), t.TempDir()}
	var cmds []*exec.Cmd
	var logs []*bytes.Buffer
	for _, out := range outs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTwoRunsShareCache$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SHARED_CACHE_SUITE="+dir, "SHARED_CACHE_OUT="+out, "SHARED_CACHE_DIR="+cacheDir)
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		mustDo(t, cmd.Start())
		cmds, logs = append(cmds, cmd), append(logs, &log)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, logs[i])
		}
		if strings.Contains(logs[i].String(), "cache: refused") {
			t.Errorf("process %d refused the cache's snapshot:\n%s", i, logs[i])
		}
	}

	p, err := plan.CompileDir(dir)
	mustDo(t, err)
	fx := p.Fixtures["fx"]
	c, err := cache.Open(cacheDir)
	mustDo(t, err)
	ents, err := c.Entries()
	mustDo(t, err)
	if len(ents) != 1 || ents[0].Tree != fx.Digest || ents[0].Files != len(fx.Files) {
		t.Errorf("cache entries %+v, want the fixture's snapshot once", ents)
	}
	if left, _ := os.ReadDir(filepath.Join(cacheDir, cache.DirTmp)); len(left) != 0 {
		t.Errorf("the cache's tmp/ holds %d entries after both runs", len(left))
	}
	mustDo(t, store.VerifyTree(c.TreeDir(fx.Digest), fx))
	for i, out := range outs {
		snap := (&store.Store{Dir: out}).TreeDir(fx.Digest)
		if err := store.VerifyTree(snap, fx); err != nil {
			t.Errorf("folder %d: %v", i, err)
		}
		a, _ := os.Stat(filepath.Join(snap, "d07", "f0007"))
		b, _ := os.Stat(filepath.Join(c.TreeDir(fx.Digest), "d07", "f0007"))
		if a == nil || b == nil || !os.SameFile(a, b) {
			t.Errorf("folder %d holds its own copy of the fixture, not links to the cache's", i)
		}
	}

	// The cache holds the fixture now: a run places it while its first
	// cells run. A snapshot damaged meanwhile (a byte, its time set back)
	// is refused and made again from the live folder before the run ends.
	f := filepath.Join(c.TreeDir(fx.Digest), "d03", "f0003")
	info, _ := os.Stat(f)
	mustDo(t, os.Chmod(f, 0o644))
	mustDo(t, os.WriteFile(f, []byte(strings.Replace(mustRead(t, f), "file", "fil3", 1)), 0o644))
	mustDo(t, os.Chmod(f, 0o444))
	mustDo(t, os.Chtimes(f, info.ModTime(), info.ModTime()))
	out := t.TempDir()
	var log lockedBuffer // the cache writes from the pin placing the fixture
	sum, err := Run(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 2, Cache: cacheDir, Log: &log})
	if err != nil || !sum.Complete() {
		t.Fatalf("run over a damaged snapshot: %v %+v\n%s", err, sum, log.String())
	}
	if !strings.Contains(log.String(), "cache: refused the snapshot of fixture fx") {
		t.Errorf("log %q does not say the damaged snapshot was refused", log.String())
	}
	mustDo(t, store.VerifyTree((&store.Store{Dir: out}).TreeDir(fx.Digest), fx))

	// Damaged again, and the live folder edited since the plan: the run
	// fails, naming the file, and its folder holds no snapshot of it.
	mustDo(t, os.Chmod(f, 0o644))
	mustDo(t, os.WriteFile(f, []byte(strings.Replace(mustRead(t, f), "file", "fil3", 1)), 0o644))
	mustDo(t, os.Chmod(f, 0o444))
	mustDo(t, os.WriteFile(filepath.Join(dir, "fx", "d03", "f0003"), []byte("edited\n"), 0o644))
	out = t.TempDir()
	_, err = Run(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 2, Cache: cacheDir, Log: &log})
	if err == nil || !strings.Contains(err.Error(), "fixture fx: d03/f0003: digest") {
		t.Errorf("run over a damaged snapshot of an edited fixture: %v", err)
	}
	if _, err := os.Stat((&store.Store{Dir: out}).TreeDir(fx.Digest)); err == nil {
		t.Errorf("the refused snapshot was placed in the run folder")
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	mustDo(t, err)
	return string(b)
}

// lockedBuffer is a bytes.Buffer written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
