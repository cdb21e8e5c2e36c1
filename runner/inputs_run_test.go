package runner

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// printedDigest is the SKILL.md digest a pinned-suite cell printed.
func printedDigest(answer string) string {
	f := strings.Fields(answer)
	if len(f) == 0 {
		return ""
	}
	return "sha256:" + f[0]
}

// skillFileDigest is the digest the plan gives the skill's SKILL.md.
func skillFileDigest(p *plan.Plan) string {
	return string(p.Skills["s"].Files["SKILL.md"].Digest)
}

// checkRanPinnedBytes checks every forced cell of a pinned-suite run: its
// rollout records the plan's skill tree, and the SKILL.md its agent read
// has the digest the plan and the store's snapshot give it. It returns the
// cell image the forced cells ran.
func checkRanPinnedBytes(t *testing.T, s runSuite, out string) string {
	t.Helper()
	want := skillFileDigest(s.Plan)
	image := ""
	for id, ro := range stored(t, out) {
		if ro.Arm != "forced" {
			continue
		}
		if got := printedDigest(ro.Answer); got != want {
			t.Errorf("%s read a SKILL.md of digest %s, the plan says %s", id, got, want)
		}
		if len(ro.Inputs.Skills) != 1 || ro.Inputs.Skills[0].Digest != s.Plan.Skills["s"].Digest || ro.Inputs.Skills[0].Key != "s" {
			t.Errorf("%s records skills %+v, the plan installs %s", id, ro.Inputs.Skills, s.Plan.Skills["s"].Digest)
		}
		snap, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(store.DirTrees), ro.Inputs.Skills[0].Digest.Encoded(), "SKILL.md"))
		if err != nil || printedDigest(ro.Answer) != string(digest.FromBytes(snap)) {
			t.Errorf("%s: the store's snapshot of its skill (%v) is not what it read", id, err)
		}
		if ro.Inputs.AgentImage == "" || ro.Inputs.CellImage == "" || ro.Inputs.Harness == "" || ro.Inputs.Fixture != s.Plan.Cases[0].FixtureDigest {
			t.Errorf("%s records inputs %+v", id, ro.Inputs)
		}
		if image == "" {
			image = ro.Inputs.CellImage
		} else if ro.Inputs.CellImage != image {
			t.Errorf("%s ran image %s, another forced cell %s", id, ro.Inputs.CellImage, image)
		}
	}
	if image == "" {
		t.Fatal("no forced cell stored")
	}
	return image
}

// TestSkillEditedDuringRun edits SKILL.md while the cells run: every cell
// run from the skill (before and after the edit) ran the pinned bytes, yet
// is invalid, naming the file, so the verdict is INCOMPLETE; once the file
// is restored the next run reruns exactly those cells.
func TestSkillEditedDuringRun(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "pinned")
	out := t.TempDir()
	skill := filepath.Join(s.Dir, "skill", "SKILL.md")
	original, err := os.ReadFile(skill)
	if err != nil {
		t.Fatal(err)
	}

	type result struct {
		sum *Summary
		rep *verdict.Report
		err error
	}
	done, finished := make(chan struct{}), make(chan result, 1)
	var log bytes.Buffer
	go func() {
		defer close(done)
		sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 1, Log: &log})
		finished <- result{sum, rep, err}
	}()
	waitStored(t, out, 1, done)
	if err := os.WriteFile(skill, append(append([]byte{}, original...), "Also do this.\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-finished
	t.Logf("run:\n%s", log.String())
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.rep.Verdict.Verdict != verdict.VerdictIncomplete || !strings.Contains(strings.Join(res.rep.Verdict.Reasons, "\n"), "INPUT-CHANGED skill s: SKILL.md modified (3 cells)") {
		t.Errorf("verdict %s %q: want INCOMPLETE naming SKILL.md", res.rep.Verdict.Verdict, res.rep.Verdict.Reasons)
	}
	if res.sum.Statuses[store.StatusInvalid] != 3 || res.sum.Complete() {
		t.Errorf("summary %+v: want the 3 forced cells invalid", res.sum)
	}
	want := skillFileDigest(s.Plan)
	for id, ro := range stored(t, out) {
		switch ro.Arm {
		case "forced":
			if ro.Status != store.StatusInvalid || !strings.Contains(ro.Error, "skill s: SKILL.md modified") || !reflect.DeepEqual(ro.InputsChanged, []string{"skill s: SKILL.md modified"}) {
				t.Errorf("%s: %s (%s) %q, want invalid naming SKILL.md", id, ro.Status, ro.Error, ro.InputsChanged)
			}
			if got := printedDigest(ro.Answer); got != want {
				t.Errorf("%s read SKILL.md of digest %s: not the pinned %s", id, got, want)
			}
		default:
			if ro.Status != store.StatusCompleted {
				t.Errorf("%s (no skill): %s %s", id, ro.Status, ro.Error)
			}
		}
	}

	// Restored, the same plan reruns exactly the invalid cells.
	if err := os.WriteFile(skill, original, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 3 || sum.Reused != 3 || !sum.Complete() {
		t.Errorf("rerun: %+v, want the 3 forced cells run again", sum)
	}
	if strings.Contains(strings.Join(rep.Verdict.Reasons, "\n"), "INPUT-CHANGED") || rep.Verdict.Verdict == verdict.VerdictIncomplete {
		t.Errorf("rerun verdict %s %q", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	checkRanPinnedBytes(t, s, out)
}

// TestRunRefusesChangedInput: a plan whose skill changed since it was
// compiled is refused before any cell, naming the file and both digests.
func TestRunRefusesChangedInput(t *testing.T) {
	s := copyTestdataSuite(t, nil, filepath.Join("run", "pinned"))
	skill := filepath.Join(s.Dir, "skill", "SKILL.md")
	if err := os.WriteFile(skill, []byte("---\nname: s\ndescription: Edited.\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock") // nothing may start
	_, err := Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir})
	now := digest.FromBytes([]byte("---\nname: s\ndescription: Edited.\n---\n"))
	if want := "verify skill s: SKILL.md: digest " + string(now) + ", the plan says " + skillFileDigest(s.Plan); err == nil || err.Error() != want {
		t.Fatalf("run of a changed skill: %v, want %q", err, want)
	}
	emptyDir(t, filepath.Join(out, filepath.FromSlash(store.DirRollouts)))
	// Verified trees may be kept (the fixture's); the refused one is not.
	if _, err := os.Stat((&store.Store{Dir: out}).TreeDir(s.Plan.Skills["s"].Digest)); err == nil {
		t.Error("the refused skill tree was stored")
	}
}

// TestCellImageHoldsPinnedBytes runs the original skill into A, an edited
// one into B, and the original again into a fresh C: each image holds
// exactly its plan's bytes, and C reuses A's image, never B's.
func TestCellImageHoldsPinnedBytes(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "pinned")
	skill := filepath.Join(s.Dir, "skill", "SKILL.md")
	original, err := os.ReadFile(skill)
	if err != nil {
		t.Fatal(err)
	}
	outA, outB, outC := t.TempDir(), t.TempDir(), t.TempDir()
	s.run(t, outA, Options{})
	imageA := checkRanPinnedBytes(t, s, outA)

	if err := os.WriteFile(skill, append(append([]byte{}, original...), "Edited.\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	b := s
	if b.Plan, err = plan.CompileDir(s.Dir); err != nil {
		t.Fatal(err)
	}
	if b.Plan.Skills["s"].Digest == s.Plan.Skills["s"].Digest {
		t.Fatal("the edit did not change the skill's digest")
	}
	b.run(t, outB, Options{})
	if imageB := checkRanPinnedBytes(t, b, outB); imageB == imageA {
		t.Errorf("B ran A's image %s", imageA)
	}

	if err := os.WriteFile(skill, original, 0o644); err != nil {
		t.Fatal(err)
	}
	c := s
	if c.Plan, err = plan.CompileDir(s.Dir); err != nil {
		t.Fatal(err)
	}
	if c.Plan.Digest != s.Plan.Digest {
		t.Fatal("the restored suite compiles to another plan")
	}
	c.run(t, outC, Options{})
	if imageC := checkRanPinnedBytes(t, c, outC); imageC != imageA {
		t.Errorf("C ran image %s, A %s: the same bytes reuse one image", imageC, imageA)
	}
	// The image carries its key; one under the tag without it is rebuilt.
	_, labels, ok, err := e.ImageLabels(context.Background(), imageA)
	if err != nil || !ok || labels[docker.LabelCellKey] == "" {
		t.Errorf("cell image labels %v (%v, %v)", labels, ok, err)
	}
}

// TestCellImageBuildVerifiesSnapshot: a snapshot changed after it was
// pinned fails the image build, naming the file, and leaves no image under
// the cell's tag.
func TestCellImageBuildVerifiesSnapshot(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "pinned")
	st, err := store.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pc, arm := s.Plan.Cases[0], s.Plan.Arms[0]
	if arm.Name != "forced" {
		t.Fatalf("first arm %s", arm.Name)
	}
	in := newInputs(s.Plan, s.Dir, st)
	if err := in.add(pc, arm); err != nil {
		t.Fatal(err)
	}
	if err := in.pin(); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(st.TreeDir(s.Plan.Skills["s"].Digest), "SKILL.md")
	b, _ := os.ReadFile(snap)
	b[len(b)-2] ^= 1 // same size, other bytes
	if err := os.Chmod(snap, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snap, b, 0o644); err != nil {
		t.Fatal(err)
	}
	im := &images{engine: dockerBackend{e}, plan: s.Plan, store: st, log: io.Discard, agent: map[string]*imageBuild{}, cells: map[digest.Digest]*imageBuild{}}
	ref, _, err := im.cellImage(context.Background(), pc, arm)
	if want := "verify " + snap + ": digest " + string(digest.FromBytes(b)) + ", the plan says " + skillFileDigest(s.Plan); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("build from a changed snapshot: %v, want %q", err, want)
	}
	if _, _, ok, err := e.ImageLabels(context.Background(), ref); err != nil || ok {
		t.Errorf("an image is tagged %s after the failed build (%v)", ref, err)
	}
}

// TestCellImageWithoutKeyIsRebuilt: an image under a cell image's tag that
// does not carry the cell's key (tagged by hand, or built by an older
// skillgate from the live folder) is not trusted: the cell rebuilds it.
func TestCellImageWithoutKeyIsRebuilt(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "pinned")
	st, err := store.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pc, arm := s.Plan.Cases[0], s.Plan.Arms[0]
	in := newInputs(s.Plan, s.Dir, st)
	if err := in.add(pc, arm); err != nil {
		t.Fatal(err)
	}
	if err := in.pin(); err != nil {
		t.Fatal(err)
	}
	newImages := func() *images {
		return &images{engine: dockerBackend{e}, plan: s.Plan, store: st, log: io.Discard, agent: map[string]*imageBuild{}, cells: map[digest.Digest]*imageBuild{}}
	}
	ref, _, err := newImages().cellImage(context.Background(), pc, arm)
	if err != nil {
		t.Fatal(err)
	}
	sandbox, err := e.EnsureSandbox(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Tag(context.Background(), sandbox, ref); err != nil {
		t.Fatal(err)
	}
	_, again, err := newImages().cellImage(context.Background(), pc, arm)
	if err != nil {
		t.Fatal(err)
	}
	id, labels, _, err := e.ImageLabels(context.Background(), ref)
	if err != nil || again != id || labels[docker.LabelCellKey] == "" {
		t.Errorf("the tag %s holds %s (labels %v, %v), the cell ran %s", ref, id, labels, err, again)
	}
	if sandboxID, _, _ := e.ImageExists(context.Background(), sandbox); again == sandboxID {
		t.Error("the cell ran the image tagged by hand")
	}
}

// TestCellImageRemovedInUseIsRebuilt: a cell image removed after the run found it (by
// skillgate gc, docker rmi, or another process that built the same content and cleaned
// up) is built again from the snapshots when the container's create finds it gone, and
// the container runs.
func TestCellImageRemovedInUseIsRebuilt(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "pinned")
	st, err := store.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pc, arm := s.Plan.Cases[0], s.Plan.Arms[0]
	in := newInputs(s.Plan, s.Dir, st)
	if err := in.add(pc, arm); err != nil {
		t.Fatal(err)
	}
	if err := in.pin(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	im := &images{engine: dockerBackend{e}, plan: s.Plan, store: st, log: io.Discard, agent: map[string]*imageBuild{}, cells: map[digest.Digest]*imageBuild{}}
	ref, _, err := im.cellImage(ctx, pc, arm)
	if err != nil {
		t.Fatal(err)
	}
	key := mustLabel(t, e, ref)
	calls := 0
	err = im.withCellImage(ctx, pc, arm, func(ref, id string) error {
		calls++
		if calls == 1 {
			// Gone between the check and the create.
			if n, err := e.RemoveImages(ctx, docker.LabelCellKey+"="+key); err != nil || n != 1 {
				t.Fatalf("remove %s: %d, %v", ref, n, err)
			}
		}
		_, err := e.RunContainer(ctx, docker.ContainerSpec{Image: ref, Cmd: []string{"true"}, User: s.Plan.Agent.User, OutputCap: 1 << 20, Timeout: time.Minute, Labels: map[string]string{dockertest.Label: "removed-in-use"}})
		return err
	})
	if err != nil || calls != 2 {
		t.Fatalf("withCellImage: %v after %d calls, want a rebuild and success on the second", err, calls)
	}
	if again := mustLabel(t, e, ref); again != key {
		t.Errorf("after the rebuild %s has the cell key %s, want %s", ref, again, key)
	}
}

func mustLabel(t *testing.T, e *docker.Engine, ref string) string {
	t.Helper()
	_, labels, ok, err := e.ImageLabels(context.Background(), ref)
	if err != nil || !ok {
		t.Fatalf("inspect %s: %v %v", ref, ok, err)
	}
	return labels[docker.LabelCellKey]
}
