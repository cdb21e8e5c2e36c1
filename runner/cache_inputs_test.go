package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/cache"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestLiveEditBetweenPlanAndRunCached: with the machine cache, the plan
// hashes a skill folder through the cache's stat index, and a file of it
// edited before the run (its size and modification time set back) is
// never taken for the planned one: with the snapshot not yet cached, the
// pin copying the live folder refuses it; with the snapshot cached, the
// run folder is linked the planned bytes, and the check after the
// rollouts, through the same index, names the file.
func TestLiveEditBetweenPlanAndRunCached(t *testing.T) {
	for _, cached := range []bool{false, true} {
		src := inputTreeDir(t)
		time.Sleep(cache.RacyMargin + 100*time.Millisecond) // the index will trust these files
		cacheDir := t.TempDir()
		c, err := cache.Open(cacheDir)
		mustDo(t, err)
		tree, err := c.HashLive(src) // the plan's compile
		mustDo(t, err)
		if want, _ := plan.HashTree(src); tree.Digest != want.Digest {
			t.Fatalf("HashLive gave %s, HashTree %s", tree.Digest, want.Digest)
		}
		if again, _ := c.HashLive(src); again.Digest != tree.Digest {
			t.Fatalf("the indexed walk gave %s, want %s", again.Digest, tree.Digest)
		}
		p := &plan.Plan{Skills: map[string]plan.PlanSkill{"s": {Skill: suite.Skill{Path: filepath.Base(src), Name: "s"}, Tree: tree}}}
		pin := func() (*inputs, error) {
			st, err := store.OpenStore(t.TempDir())
			mustDo(t, err)
			mustDo(t, useCache(st, Options{Cache: cacheDir}))
			in := newInputs(p, filepath.Dir(src), st)
			mustDo(t, in.add(plan.PlanCase{}, plan.PlanArm{Name: "forced", Arm: suite.Arm{Skills: []string{"s"}}}))
			return in, in.pin()
		}
		if cached {
			_, err := pin()
			mustDo(t, err)
		}

		f := filepath.Join(src, "SKILL.md")
		info, _ := os.Stat(f)
		mustDo(t, os.WriteFile(f, []byte("---\nname: x\n---\n# s\n"), 0o644)) // same size
		mustDo(t, os.Chtimes(f, info.ModTime(), info.ModTime()))

		in, err := pin()
		if !cached {
			if err == nil {
				t.Errorf("a live folder edited since the plan was pinned into an empty cache")
			}
			continue
		}
		mustDo(t, err)
		if err := store.VerifyTree(in.store.TreeDir(tree.Digest), tree); err != nil {
			t.Errorf("the run folder's snapshot: %v", err)
		}
		if got := in.recheck()["skill s"]; len(got) != 1 || got[0] != "skill s: SKILL.md modified" {
			t.Errorf("the check after the rollouts: %q, want SKILL.md modified", got)
		}
	}
}
