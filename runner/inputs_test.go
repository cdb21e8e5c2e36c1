package runner

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/images"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// inputTreeDir lays out a skill folder: a file, an executable one in a
// subfolder, and a relative symlink.
func inputTreeDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: s\n---\n# s\n"), 0o644))
	mustDo(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "bin", "run.sh"), []byte("#!/bin/sh\necho run\n"), 0o755))
	mustDo(t, os.Symlink("SKILL.md", filepath.Join(dir, "README.md")))
	return dir
}

// TestPinTreeVerifies: a snapshot holds exactly the plan's tree, read-only;
// any other byte, mode, link, extra or missing file refuses it, naming the
// file.
func TestPinTreeVerifies(t *testing.T) {
	src := inputTreeDir(t)
	want, err := plan.HashTree(src)
	mustDo(t, err)
	st, err := store.OpenStore(t.TempDir())
	mustDo(t, err)

	dir, err := st.PinTree("skill s", src, want)
	mustDo(t, err)
	if dir != st.TreeDir(want.Digest) {
		t.Errorf("snapshot at %s, want %s", dir, st.TreeDir(want.Digest))
	}
	got, err := plan.HashTree(dir)
	mustDo(t, err)
	if got.Digest != want.Digest {
		t.Errorf("snapshot digest %s, the plan's %s: %v", got.Digest, want.Digest, plan.DiffTrees(want, got))
	}
	if fi, _ := os.Stat(filepath.Join(dir, "SKILL.md")); fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("snapshot file is writable: %v", fi.Mode())
	}
	// Stored once: a later pin does not copy again, whatever the live folder.
	mustDo(t, os.WriteFile(filepath.Join(src, "SKILL.md"), []byte("edited"), 0o644))
	if again, err := st.PinTree("skill s", src, want); err != nil || again != dir {
		t.Errorf("pin of a stored tree: %s, %v", again, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "SKILL.md")); string(b) == "edited" {
		t.Error("the stored snapshot changed")
	}

	for _, tc := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"other bytes", func(d string) {
			mustDo(t, os.WriteFile(filepath.Join(d, "SKILL.md"), []byte("---\nname: s\n---\n# S\n"), 0o644))
		},
			"verify skill s: SKILL.md: digest " + string(digest.FromString("---\nname: s\n---\n# S\n")) + ", the plan says " + string(want.Files["SKILL.md"].Digest)},
		{"an extra file", func(d string) { mustDo(t, os.WriteFile(filepath.Join(d, "notes.md"), nil, 0o644)) }, "verify skill s: notes.md: not in the plan"},
		{"a missing file", func(d string) { mustDo(t, os.Remove(filepath.Join(d, "bin", "run.sh"))) }, "verify skill s: bin/run.sh: in the plan, missing from the folder"},
		{"a mode", func(d string) { mustDo(t, os.Chmod(filepath.Join(d, "bin", "run.sh"), 0o644)) }, "verify skill s: bin/run.sh: a regular file, the plan says an executable file"},
		{"a link target", func(d string) {
			mustDo(t, os.Remove(filepath.Join(d, "README.md")))
			mustDo(t, os.Symlink("bin/run.sh", filepath.Join(d, "README.md")))
		}, "verify skill s: README.md: symlink to bin/run.sh"},
	} {
		src := inputTreeDir(t)
		tc.edit(src)
		fresh, err := store.OpenStore(t.TempDir())
		mustDo(t, err)
		if _, err := fresh.PinTree("skill s", src, want); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
		if _, err := os.Stat(fresh.TreeDir(want.Digest)); err == nil {
			t.Errorf("%s: a refused tree was stored", tc.name)
		}
	}
}

// TestImageContextVerifiesTrees: a tree added from a snapshot carries its
// modes, owners and link, and a byte changed in the snapshot after it was
// pinned fails writing the context, naming the file.
func TestImageContextVerifiesTrees(t *testing.T) {
	src := inputTreeDir(t)
	tree, err := plan.HashTree(src)
	mustDo(t, err)
	st, err := store.OpenStore(t.TempDir())
	mustDo(t, err)
	dir, err := st.PinTree("skill s", src, tree)
	mustDo(t, err)

	bc := docker.NewBuildContext(dockertest.LayerDockerfile)
	mustDo(t, bc.AddTree("/workspace/.claude/skills/s", dir, images.TreeFiles(tree), 1000, 1000))
	_, hdrs, contents, _ := dockertest.ReadContext(t, dockertest.WriteContext(t, bc))
	for name, mode := range map[string]int64{
		"workspace/.claude/skills/s": 0o755, "workspace/.claude/skills/s/bin": 0o755,
		"workspace/.claude/skills/s/SKILL.md": 0o644, "workspace/.claude/skills/s/bin/run.sh": 0o755,
	} {
		h := hdrs[name]
		if h == nil || h.Mode != mode || h.Uid != 1000 || h.Gid != 1000 {
			t.Errorf("%s: %+v, want mode %o owned by 1000", name, h, mode)
		}
	}
	if h := hdrs["workspace/.claude/skills/s/README.md"]; h == nil || h.Linkname != "SKILL.md" {
		t.Errorf("README.md: %+v", h)
	}
	if contents["workspace/.claude/skills/s/bin/run.sh"] != "#!/bin/sh\necho run\n" {
		t.Errorf("run.sh: %q", contents["workspace/.claude/skills/s/bin/run.sh"])
	}

	// The same length, other bytes: only the digest tells.
	p := filepath.Join(dir, "SKILL.md")
	mustDo(t, os.Chmod(p, 0o644))
	mustDo(t, os.WriteFile(p, []byte("---\nname: x\n---\n# s\n"), 0o644))
	bc = docker.NewBuildContext(dockertest.LayerDockerfile)
	mustDo(t, bc.AddTree("/workspace/.claude/skills/s", dir, images.TreeFiles(tree), 1000, 1000))
	_, err = bc.WriteTo(io.Discard)
	if want := "verify " + p + ": digest " + string(digest.FromString("---\nname: x\n---\n# s\n")) + ", the plan says " + string(tree.Files["SKILL.md"].Digest); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("tampered snapshot: err = %v, want %q", err, want)
	}
}

// TestRecheckNamesChanges: the check after the rollouts names every file
// of a pinned tree that was added, removed or modified, same-size edits
// included, and nothing when the folder is as the plan says.
func TestRecheckNamesChanges(t *testing.T) {
	src := inputTreeDir(t)
	tree, err := plan.HashTree(src)
	mustDo(t, err)
	st, err := store.OpenStore(t.TempDir())
	mustDo(t, err)
	p := &plan.Plan{Skills: map[string]plan.PlanSkill{"s": {Skill: suite.Skill{Path: filepath.Base(src), Name: "s"}, Tree: tree}}}
	in := newInputs(p, filepath.Dir(src), st)
	mustDo(t, in.add(plan.PlanCase{}, plan.PlanArm{Name: "forced", Arm: suite.Arm{Skills: []string{"s"}}}))
	mustDo(t, in.pin())
	if got := in.recheck(); len(got) != 0 {
		t.Fatalf("unchanged folder: %v", got)
	}
	mustDo(t, os.WriteFile(filepath.Join(src, "SKILL.md"), []byte("---\nname: x\n---\n# s\n"), 0o644)) // same size
	mustDo(t, os.WriteFile(filepath.Join(src, "bin", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	mustDo(t, os.Remove(filepath.Join(src, "README.md")))
	mustDo(t, os.WriteFile(filepath.Join(src, "new.md"), nil, 0o644))
	want := []string{"skill s: README.md removed", "skill s: SKILL.md modified", "skill s: bin/run.sh modified", "skill s: new.md added"}
	if got := in.recheck()["skill s"]; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes %q, want %q", got, want)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
