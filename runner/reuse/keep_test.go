package reuse

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/cache"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// runFolder stores n completed rollouts (sealed records with their answer
// files) in a fresh run folder under dir, as a run commits them.
func runFolder(t *testing.T, dir string, n int) (*store.Store, []digest.Digest) {
	t.Helper()
	st, err := store.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []digest.Digest
	for i := 0; i < n; i++ {
		key := digest.FromString(fmt.Sprintf("rollout %d", i))
		staged, err := st.Stage()
		if err != nil {
			t.Fatal(err)
		}
		answer := fmt.Sprintf("answer %d\n", i)
		if err := os.WriteFile(filepath.Join(staged, store.FileAnswer), []byte(answer), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(staged, store.FileStdout), []byte("out "+answer), 0o644); err != nil {
			t.Fatal(err)
		}
		r := &store.Rollout{Key: key, Cell: fmt.Sprintf("c/none/%d", i+1), Case: "c", Arm: "none", Trial: i + 1,
			Status: store.StatusCompleted, Answer: answer, StartedAt: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)}
		if err := st.Commit(staged, r); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	return st, keys
}

// kept checks that the cache holds each key's rollout, verified.
func kept(t *testing.T, c *cache.Cache, keys []digest.Digest) {
	t.Helper()
	none := func(*store.Rollout) error { return nil }
	for _, k := range keys {
		if _, err := check(c.RolloutDir(k), k, none); err != nil {
			t.Errorf("kept rollout %s: %v", k.Encoded()[:12], err)
		}
	}
}

// TestKeepTwoProcesses: two processes keep the same 30 rollouts into one
// cache at once; each key is kept once, verified, and tmp/ is left empty.
func TestKeepTwoProcesses(t *testing.T) {
	if dir := os.Getenv("REUSE_TEST_KEEP"); dir != "" {
		st := &store.Store{Dir: os.Getenv("REUSE_TEST_RUN")}
		var keys []digest.Digest
		for i := 0; i < 30; i++ {
			keys = append(keys, digest.FromString(fmt.Sprintf("rollout %d", i)))
		}
		var log bytes.Buffer
		n, err := Keep(dir, st, keys, &log)
		if err != nil || log.Len() > 0 {
			t.Fatalf("keep: %v\n%s", err, log.String())
		}
		fmt.Printf("kept %d\n", n)
		return
	}
	run := t.TempDir()
	_, keys := runFolder(t, run, 30)
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKeepTwoProcesses$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "REUSE_TEST_KEEP="+dir, "REUSE_TEST_RUN="+run)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	total := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
		var n int
		for _, l := range strings.Split(outs[i].String(), "\n") {
			if _, err := fmt.Sscanf(l, "kept %d", &n); err == nil {
				total += n
			}
		}
	}
	if total != 30 {
		t.Errorf("the two processes kept %d rollouts between them, want each of the 30 once", total)
	}
	c, err := cache.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := c.RolloutEntries(); len(ents) != 30 {
		t.Errorf("%d kept rollouts, want 30", len(ents))
	}
	kept(t, c, keys)
	if left, _ := os.ReadDir(filepath.Join(dir, cache.DirTmp)); len(left) != 0 {
		t.Errorf("tmp/ holds %d entries after both processes", len(left))
	}
}

// TestKeepRefusesDamaged: a rollout damaged in the run folder is not kept;
// a kept rollout damaged in the cache is replaced by the next Keep of its
// key.
func TestKeepRefusesDamaged(t *testing.T) {
	st, keys := runFolder(t, t.TempDir(), 2)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(st.RolloutDir(keys[0]), store.FileAnswer), []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if n, err := Keep(c.Dir, st, keys, &log); err != nil || n != 1 {
		t.Fatalf("keep with one damaged rollout: kept %d, %v", n, err)
	}
	if !strings.Contains(log.String(), "cache: rollout "+keys[0].Encoded()[:12]+" not kept: ") {
		t.Errorf("the log does not name the damaged rollout: %q", log.String())
	}
	if _, err := os.Stat(c.RolloutDir(keys[0])); err == nil {
		t.Errorf("the damaged rollout was kept")
	}

	kept(t, c, keys[1:])
	answer := filepath.Join(c.RolloutDir(keys[1]), filepath.FromSlash(store.DirRollouts), keys[1].Encoded(), store.FileAnswer)
	if err := os.WriteFile(answer, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := Keep(c.Dir, st, keys[1:], &log); err != nil || n != 1 {
		t.Fatalf("keep over a damaged kept rollout: kept %d, %v", n, err)
	}
	kept(t, c, keys[1:])
	if n, _ := Keep(c.Dir, st, keys[1:], &log); n != 0 {
		t.Errorf("keep of a rollout the cache holds, verified: kept %d again, want 0", n)
	}
}
