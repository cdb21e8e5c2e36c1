package cell

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/redact"
)

// testFixture is the initial workspace of testAgentImage.
func testFixture() map[string]plan.TreeEntry {
	files := map[string]plan.TreeEntry{}
	for p, body := range map[string]string{"keep.txt": "old\n", "gone.txt": "doomed\n", "sub/deep.txt": "deep\n"} {
		files[p] = plan.TreeEntry{Digest: digest.FromString(body), Size: int64(len(body))}
	}
	return files
}

// collectRun runs spec and collects its workspace against testAgentImage's fixture,
// through the upper layer or, with api, through the engine's API.
func collectRun(t *testing.T, e *docker.Engine, spec docker.ContainerSpec, api bool) ([]store.Change, string, docker.Collection) {
	return collectRunFrom(t, e, spec, api, testFixture())
}

// collectRunFrom is collectRun against the initial workspace given.
func collectRunFrom(t *testing.T, e *docker.Engine, spec docker.ContainerSpec, api bool, initial map[string]plan.TreeEntry) ([]store.Change, string, docker.Collection) {
	t.Helper()
	blobs := t.TempDir()
	col := newWorkspaceCollector(initial, blobs, &redact.Redactor{}, workspaceLimits{})
	spec.CollectPrefix, spec.Collect, spec.CollectAPI = "/workspace", col.visit, api
	out := dockertest.Run(t, e, spec)
	if out.ExitCode != 0 {
		t.Fatalf("exit %d; stderr %q", out.ExitCode, out.Stderr)
	}
	if want := map[bool]string{false: "upper", true: "api"}[api]; out.Collection.Method != want {
		t.Errorf("collected by %q, want %q", out.Collection.Method, want)
	}
	return col.changes(out.Collection.Method == "api" && out.Collection.Cut == ""), blobs, out.Collection
}

// TestContainerCollect: what a container changed in its workspace, read
// through its upper layer and through the engine's API alike, becomes the
// same changes against the fixture, the changed files stored once by
// digest.
func TestContainerCollect(t *testing.T) {
	e := dockertest.Engine(t)
	labels, sel := dockertest.Labels(t, e)
	img := dockertest.AgentImage(t, e, labels)
	base := docker.ContainerSpec{
		Image:      img,
		User:       "1000:1000",
		WorkingDir: "/workspace",
		Labels:     labels,
		Memory:     256 << 20,
		NanoCPUs:   1e9,
		PidsLimit:  64,
		Timeout:    20 * time.Second,
		OutputCap:  1 << 20,
	}

	t.Run("Write", func(t *testing.T) {
		for _, api := range []bool{false, true} {
			spec := base
			spec.Cmd = []string{"/bin/testagent", "write"}
			changes, blobs, col := collectRun(t, e, spec, api)
			want := []store.Change{{Path: "out.txt", Kind: store.ChangeAdded, Type: "file", Size: 21, Digest: digest.FromString("written by testagent\n")}}
			if !reflect.DeepEqual(changes, want) {
				t.Errorf("api %v: changes %+v, want %+v (collection %+v)", api, changes, want, col)
			}
			got, err := os.ReadFile(filepath.Join(blobs, want[0].Digest.Encoded()))
			if err != nil || string(got) != "written by testagent\n" {
				t.Errorf("api %v: stored out.txt = %q, %v", api, got, err)
			}
		}
	})
	t.Run("FixtureChanges", func(t *testing.T) {
		for _, api := range []bool{false, true} {
			spec := base
			spec.Cmd = []string{"sh", "-c", "printf new > keep.txt && rm gone.txt && mkdir -p newdir/a && echo x > newdir/a/b.txt && ln -s keep.txt link && touch sub/deep.txt"}
			changes, blobs, col := collectRun(t, e, spec, api)
			want := []store.Change{
				{Path: "gone.txt", Kind: store.ChangeDeleted, Type: "file"},
				{Path: "keep.txt", Kind: store.ChangeModified, Type: "file", Size: 3, Digest: digest.FromString("new")},
				{Path: "link", Kind: store.ChangeAdded, Type: "symlink", Target: "keep.txt"},
				{Path: "newdir/a/b.txt", Kind: store.ChangeAdded, Type: "file", Size: 2, Digest: digest.FromString("x\n")},
			}
			if !reflect.DeepEqual(changes, want) {
				t.Errorf("api %v: changes %+v,\nwant %+v (collection %+v)", api, changes, want, col)
			}
			var files []string
			filepath.WalkDir(blobs, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(p)
					files = append(files, string(b))
				}
				return nil
			})
			sort.Strings(files)
			// sub/deep.txt was only touched: its bytes are the fixture's, not stored.
			if wantFiles := []string{"new", "x\n"}; !reflect.DeepEqual(files, wantFiles) {
				t.Errorf("api %v: stored %q, want %q", api, files, wantFiles)
			}
		}
	})
	t.Run("Shapes", func(t *testing.T) {
		// A folder removed, a file turned into a folder: the same final state either way.
		for _, api := range []bool{false, true} {
			spec := base
			spec.Cmd = []string{"sh", "-c", "rm -rf sub && rm keep.txt && mkdir keep.txt && echo y >keep.txt/in"}
			changes, _, col := collectRun(t, e, spec, api)
			want := []store.Change{
				{Path: "keep.txt", Kind: store.ChangeModified, Type: "dir"},
				{Path: "keep.txt/in", Kind: store.ChangeAdded, Type: "file", Size: 2, Digest: digest.FromString("y\n")},
				{Path: "sub", Kind: store.ChangeDeleted, Type: "dir"},
				{Path: "sub/deep.txt", Kind: store.ChangeDeleted, Type: "file"},
			}
			if !reflect.DeepEqual(changes, want) {
				t.Errorf("api %v: changes %+v,\nwant %+v (collection %+v)", api, changes, want, col)
			}
		}
	})
	t.Run("Trees", func(t *testing.T) {
		// A skill bound read-only inside the workspace is part of its initial state:
		// neither way of reading the changes takes it, or its mount point, for one, and
		// the agent's attempts to change it fail.
		host := t.TempDir()
		if err := os.WriteFile(filepath.Join(host, "SKILL.md"), []byte("skill\n"), 0o444); err != nil {
			t.Fatal(err)
		}
		initial := testFixture()
		initial["skills/s/SKILL.md"] = plan.TreeEntry{Digest: digest.FromString("skill\n"), Size: 6}
		for _, api := range []bool{false, true} {
			spec := base
			spec.Trees = []docker.Tree{{Host: host, Path: "/workspace/skills/s"}}
			spec.Cmd = []string{"sh", "-c", "cat skills/s/SKILL.md >/dev/null && echo own > own.txt && { echo x >> skills/s/SKILL.md || rm -f skills/s/SKILL.md || true; } 2>/dev/null"}
			changes, _, col := collectRunFrom(t, e, spec, api, initial)
			want := []store.Change{{Path: "own.txt", Kind: store.ChangeAdded, Type: "file", Size: 4, Digest: digest.FromString("own\n")}}
			if !reflect.DeepEqual(changes, want) {
				t.Errorf("api %v: changes %+v,\nwant %+v (collection %+v)", api, changes, want, col)
			}
		}
		if b, err := os.ReadFile(filepath.Join(host, "SKILL.md")); err != nil || string(b) != "skill\n" {
			t.Errorf("the bound folder holds %q (%v)", b, err)
		}
	})

	// Every container of the subtests is gone without a sweep.
	n, err := e.Sweep(context.Background(), sel)
	if err != nil || n != 0 {
		t.Errorf("containers left behind: %d, %v", n, err)
	}
}

// TestEntryTypesAreStoredTypes: the collector stores an entry's type as the
// engine gives it, so the engine's words must be the stored changes'.
func TestEntryTypesAreStoredTypes(t *testing.T) {
	for engine, stored := range map[string]string{
		docker.TypeFile: grade.TypeFile, docker.TypeDir: grade.TypeDir,
		docker.TypeSymlink: grade.TypeSymlink, docker.TypeOther: grade.TypeOther,
	} {
		if engine != stored {
			t.Errorf("the engine's type %q is stored as %q", engine, stored)
		}
	}
}

// TestWorkspaceIndexPerCellImage: the trials of one cell image share one index of its
// initial workspace, a setup's changes make another, and what one trial's collection
// sees never reaches another's through the shared index.
func TestWorkspaceIndexPerCellImage(t *testing.T) {
	s := pinnedSuite(t)
	pc := s.Plan.Cases[0]
	var forced plan.PlanArm
	for _, a := range s.Plan.Arms {
		if a.Name == "forced" {
			forced = plan.CaseArm(s.Plan, pc, a)
		}
	}
	var xs workspaceIndexes
	x := xs.of(s.Plan, pc, forced, nil)
	if again := xs.of(s.Plan, pc, forced, nil); again != x {
		t.Error("a second trial of the cell image indexed its workspace again")
	}
	skill := s.Plan.Agent.SkillsDir + "/s/SKILL.md"
	if _, ok := x.initial["README.md"]; !ok || !x.dirs[s.Plan.Agent.SkillsDir+"/s"] {
		t.Fatalf("index %v %v lacks the fixture or the skill", x.sorted, x.dirs)
	}
	if _, ok := x.initial[skill]; !ok {
		t.Fatalf("index %v lacks %s", x.sorted, skill)
	}
	set := xs.of(s.Plan, pc, forced, []grade.FileChange{{Path: "README.md", Kind: grade.ChangeDeleted}})
	if set == x {
		t.Fatal("a setup's changes share the index of the workspace without them")
	}
	if _, ok := set.initial["README.md"]; ok {
		t.Error("the setup's deletion is not in its index")
	}
	if _, ok := x.initial["README.md"]; !ok {
		t.Error("the setup's deletion reached the index without it")
	}

	one := newIndexedCollector(x, t.TempDir(), &redact.Redactor{}, workspaceLimits{})
	two := newIndexedCollector(x, t.TempDir(), &redact.Redactor{}, workspaceLimits{})
	if err := one.visit(docker.WorkspaceEntry{Path: "README.md", Deleted: true}); err != nil {
		t.Fatal(err)
	}
	if got := one.changes(false); len(got) != 1 || got[0].Path != "README.md" || got[0].Kind != grade.ChangeDeleted {
		t.Errorf("the deleting trial's changes %+v", got)
	}
	if got := two.changes(false); len(got) != 0 {
		t.Errorf("another trial of the image sees %+v", got)
	}
}

// pinnedSuite is the runner's testdata suite run/pinned, copied into a
// repository of its own and compiled.
func pinnedSuite(t *testing.T) struct{ Plan *plan.Plan } {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "pinned")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "testdata", "run", "pinned"))); err != nil {
		t.Fatal(err)
	}
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, dir))
	}
	return struct{ Plan *plan.Plan }{p}
}
