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

	"github.com/skillgate/skillgate/runner/cache"
	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
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
// is restored the next run reruns exactly those cells. So without a cache
// and with one, where the plan is compiled through it as skillgate run
// compiles it and the watch its walk set is what reports the edit.
func TestSkillEditedDuringRun(t *testing.T) {
	e := dockertest.Engine(t)
	t.Run("copied", func(t *testing.T) { skillEditedDuringRun(t, e, "") })
	t.Run("cache", func(t *testing.T) { skillEditedDuringRun(t, e, t.TempDir()) })
}

func skillEditedDuringRun(t *testing.T, e *docker.Engine, cacheDir string) {
	s := copySuite(t, e, "pinned")
	if cacheDir != "" {
		t.Cleanup(cache.Unwatch)
		plan.SetLiveHasher(cache.LiveHasher(cacheDir))
		p, err := plan.CompileDir(s.Dir)
		plan.SetLiveHasher(nil)
		mustDo(t, err)
		s.Plan = p
	}
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
		sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 1, Log: &log, Cache: cacheDir})
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
	sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, Cache: cacheDir})
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

// TestCellRunsPinnedBytes runs the original skill into A, an edited one
// into B, and the original again into a fresh C: each cell reads exactly its
// plan's bytes, and all three run one cell image, which holds no skill (a
// cell gets its skills from the store's snapshots).
func TestCellRunsPinnedBytes(t *testing.T) {
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
	if imageB := checkRanPinnedBytes(t, b, outB); imageB != imageA {
		t.Errorf("B ran image %s, A %s: an edited skill changes no image", imageB, imageA)
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
		t.Errorf("C ran image %s, A %s", imageC, imageA)
	}
	// The image carries its key; one under the tag without it is rebuilt.
	_, labels, ok, err := e.ImageLabels(context.Background(), imageA)
	if err != nil || !ok || labels[docker.LabelCellKey] == "" {
		t.Errorf("cell image labels %v (%v, %v)", labels, ok, err)
	}
}

// TestChangedSnapshotFailsOnlyItsCells: a skill's snapshot changed in the
// store after it was pinned (a byte of SKILL.md, as a disk or a hand might)
// is found before its cells start: each cell of the arm that installs it is
// invalid, naming the file and both digests, and never runs, while the arm
// without skills runs; a file added to the snapshot is refused as well.
func TestChangedSnapshotFailsOnlyItsCells(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "pinned")
	out := t.TempDir()
	st, err := store.OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	in := newInputs(s.Plan, s.Dir, st)
	for _, arm := range s.Plan.Arms {
		if err := in.add(s.Plan.Cases[0], arm); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.pin(); err != nil {
		t.Fatal(err)
	}
	snap, b := tamperSkill(t, st, s.Plan.Skills["s"].Digest)
	sum, err := Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir})
	if err != nil {
		t.Fatal(err)
	}
	want := "verify " + snap + ": digest " + string(digest.FromBytes(b)) + ", the plan says " + skillFileDigest(s.Plan)
	forced := 0
	for id, ro := range stored(t, out) {
		switch ro.Arm {
		case "forced":
			forced++
			if ro.Status != store.StatusInvalid || !strings.Contains(ro.Error, want) || ro.Answer != "" {
				t.Errorf("%s from a changed snapshot: %s %q answer %q, want invalid with %q and no run", id, ro.Status, ro.Error, ro.Answer, want)
			}
		default:
			if ro.Status != store.StatusCompleted {
				t.Errorf("%s (no skill): %s %s", id, ro.Status, ro.Error)
			}
		}
	}
	if forced == 0 || sum.Statuses[store.StatusInvalid] != forced {
		t.Errorf("summary %+v, %d forced cells", sum, forced)
	}

	// Restored, it is given; with a file the plan does not list beside the plan's own
	// bytes, it is not (each check as a fresh run makes it).
	fresh := func() *images.Images { return images.New(dockerBackend{e}, s.Plan, st, io.Discard) }
	orig, err := os.ReadFile(filepath.Join(s.Dir, "skill", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snap, orig, 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh().SkillTrees(s.Plan.Arms[0]); err != nil {
		t.Fatalf("the restored snapshot: %v", err)
	}
	extra := filepath.Join(st.TreeDir(s.Plan.Skills["s"].Digest), "extra.md")
	if err := os.WriteFile(extra, []byte("more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh().SkillTrees(s.Plan.Arms[0]); err == nil || !strings.Contains(err.Error(), "verify "+extra+": not in the plan") {
		t.Errorf("a snapshot with a file added: %v", err)
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
	newImages := func() *images.Images {
		return images.New(dockerBackend{e}, s.Plan, st, io.Discard)
	}
	ref, _, err := newImages().CellImage(context.Background(), pc, arm)
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
	_, again, err := newImages().CellImage(context.Background(), pc, arm)
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

	// The same holds for the fixture image below it: with the cell image gone and the
	// fixture's tag on another image, both are built again.
	im := newImages()
	agentRef, agentID, _, err := im.AgentImage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fixtureRef, _, err := im.FixtureImage(context.Background(), pc, agentRef, agentID, pc.Environment)
	if err != nil {
		t.Fatal(err)
	}
	fixtureKey := mustLabel(t, e, fixtureRef)
	if n, err := e.RemoveImages(context.Background(), docker.LabelCellKey+"="+mustLabel(t, e, ref)); err != nil || n != 1 {
		t.Fatalf("remove %s: %d %v", ref, n, err)
	}
	if err := e.Tag(context.Background(), sandbox, fixtureRef); err != nil {
		t.Fatal(err)
	}
	if _, _, err := newImages().CellImage(context.Background(), pc, arm); err != nil {
		t.Fatal(err)
	}
	fixture, _, err := e.ImageInfo(context.Background(), fixtureRef)
	if err != nil || fixture.Labels[docker.LabelCellKey] != fixtureKey {
		t.Fatalf("the tag %s holds %+v (%v), want the fixture of key %s", fixtureRef, fixture, err, fixtureKey)
	}
	cell, _, err := e.ImageInfo(context.Background(), ref)
	if err != nil || len(cell.Layers) != len(fixture.Layers)+1 || !reflect.DeepEqual(cell.Layers[:len(fixture.Layers)], fixture.Layers) {
		t.Errorf("the cell image's layers %v (%v) are not the rebuilt fixture's %v and one more", cell.Layers, err, fixture.Layers)
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
	im := images.New(dockerBackend{e}, s.Plan, st, io.Discard)
	ref, _, err := im.CellImage(ctx, pc, arm)
	if err != nil {
		t.Fatal(err)
	}
	key := mustLabel(t, e, ref)
	fixtureRef := onlyFixture(t, im)
	fixtureKey := mustLabel(t, e, fixtureRef)
	calls := 0
	err = im.WithCellImage(ctx, pc, arm, func(ref, id string) error {
		calls++
		if calls == 1 {
			// Gone between the check and the create, with the fixture image below it.
			for _, k := range []string{key, fixtureKey} {
				if n, err := e.RemoveImages(ctx, docker.LabelCellKey+"="+k); err != nil || n != 1 {
					t.Fatalf("remove the image of key %s: %d, %v", k, n, err)
				}
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
	if again := mustLabel(t, e, fixtureRef); again != fixtureKey {
		t.Errorf("after the rebuild %s has the cell key %s, want %s", fixtureRef, again, fixtureKey)
	}
}

// keyNamesTag reports whether an image's key (its LabelCellKey) gives it its tag.
func keyNamesTag(key, ref string) bool {
	tag, ok := strings.CutPrefix(ref, docker.CellImageRepo+":")
	return ok && len(tag) == 24 && strings.HasPrefix(key, "sha256:"+tag)
}

// onlyFixture is the one fixture image im found or built.
func onlyFixture(t testing.TB, im *images.Images) string {
	t.Helper()
	refs := im.FixtureRefs()
	if len(refs) != 1 {
		t.Fatalf("%d fixture images, want 1", len(refs))
	}
	for _, ref := range refs {
		return ref
	}
	return ""
}

// TestFixtureImageSharedByArms: the cell image of a case's arm without skills is its
// fixture image, and that of its arms with skills the fixture image and one small layer
// (the skills folder), so the fixture is built and stored once per case; the fixture
// image is labelled like a cell image (gc and a suite's cleanup remove it), its tag and
// ID follow from its content, and each cell still holds exactly its arm's skills, which
// it cannot change.
func TestFixtureImageSharedByArms(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "pinned")
	st, err := store.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pc := s.Plan.Cases[0]
	in := newInputs(s.Plan, s.Dir, st)
	for _, arm := range s.Plan.Arms {
		if err := in.add(pc, arm); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.pin(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	im := images.New(dockerBackend{e}, s.Plan, st, io.Discard)
	cells := map[string]string{}
	for _, arm := range s.Plan.Arms {
		ref, id, err := im.CellImage(ctx, pc, arm)
		if err != nil {
			t.Fatal(err)
		}
		if info, ok, err := e.ImageInfo(ctx, ref); err != nil || !ok || info.ID != id {
			t.Fatalf("%s: %+v %v %v, the build said %s", ref, info, ok, err, id)
		}
		cells[arm.Name] = ref
	}
	fixtureRef := onlyFixture(t, im)
	fixture, _, err := e.ImageInfo(ctx, fixtureRef)
	if err != nil {
		t.Fatal(err)
	}
	agentRef, _, _, err := im.AgentImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	agentImg, _, err := e.ImageInfo(ctx, agentRef)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixture.Layers) != len(agentImg.Layers)+1 || !reflect.DeepEqual(fixture.Layers[:len(agentImg.Layers)], agentImg.Layers) {
		t.Errorf("fixture image layers %v, want the agent image's %v and one more", fixture.Layers, agentImg.Layers)
	}
	if fixture.Labels[docker.LabelImage] != "cell" || fixture.Labels[docker.LabelSuite] != s.Plan.Suite.Name || !keyNamesTag(fixture.Labels[docker.LabelCellKey], fixtureRef) {
		t.Errorf("fixture image %s labels %v", fixtureRef, fixture.Labels)
	}
	if cells["none"] != fixtureRef {
		t.Errorf("the arm without skills runs %s, want its fixture image %s", cells["none"], fixtureRef)
	}
	snap := st.TreeDir(s.Plan.Skills["s"].Digest)
	before, err := os.ReadFile(filepath.Join(snap, "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	skills := s.Plan.Agent.SkillsDir
	for _, arm := range s.Plan.Arms {
		name, ref := arm.Name, cells[arm.Name]
		info, _, err := e.ImageInfo(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if name == "forced" {
			if len(info.Layers) != len(fixture.Layers)+1 || !reflect.DeepEqual(info.Layers[:len(fixture.Layers)], fixture.Layers) {
				t.Errorf("arm %s: layers %v, want the fixture image's %v and one more", name, info.Layers, fixture.Layers)
			}
			if own := info.Size - fixture.Size; own < 0 || own > 4<<10 {
				t.Errorf("arm %s: its own layer is %d bytes, want the skills folder alone", name, own)
			}
			if info.Labels[docker.LabelCellKey] == fixture.Labels[docker.LabelCellKey] || !keyNamesTag(info.Labels[docker.LabelCellKey], ref) {
				t.Errorf("arm %s: cell key %s, tag %s, fixture key %s", name, info.Labels[docker.LabelCellKey], ref, fixture.Labels[docker.LabelCellKey])
			}
		}
		trees, err := im.SkillTrees(arm)
		if err != nil {
			t.Fatal(err)
		}
		// The agent lists its skills, tries to change one and to add a file beside it, and
		// writes a file of its own in the skills folder.
		script := "cat README.md >/dev/null && echo fixture; ls -A " + skills + " 2>/dev/null; " +
			"echo gamed >> " + skills + "/s/SKILL.md 2>/dev/null && echo changed; " +
			"echo x > " + skills + "/s/new.md 2>/dev/null && echo added; " +
			"mkdir -p " + skills + " && echo mine > " + skills + "/notes.txt && echo own"
		out, err := e.RunContainer(ctx, docker.ContainerSpec{Image: ref, Cmd: []string{"sh", "-c", script}, Trees: trees, User: s.Plan.Agent.User, WorkingDir: docker.Workspace, OutputCap: 1 << 20, Timeout: time.Minute, Labels: map[string]string{dockertest.Label: "fixture-shared"}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"forced": "fixture\ns\nown\n", "none": "fixture\nown\n"}[name]
		if string(out.Stdout) != want {
			t.Errorf("arm %s holds %q, want %q (stderr %s)", name, out.Stdout, want, out.Stderr)
		}
	}
	if after, err := os.ReadFile(filepath.Join(snap, "SKILL.md")); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the store's snapshot changed under a cell: %q (%v)", after, err)
	}
	// A fresh run finds the same images by their tags and keys, and builds nothing.
	again := images.New(dockerBackend{e}, s.Plan, st, io.Discard)
	for _, arm := range s.Plan.Arms {
		ref, id, err := again.CellImage(ctx, pc, arm)
		if info, _, _ := e.ImageInfo(ctx, cells[arm.Name]); err != nil || ref != cells[arm.Name] || id != info.ID {
			t.Errorf("arm %s again: %s %s %v, first %s %s", arm.Name, ref, id, err, cells[arm.Name], info.ID)
		}
		// The image of an arm with skills is found without its fixture image's lookup.
		if n := len(again.FixtureRefs()); len(arm.Skills) > 0 && n != 0 {
			t.Errorf("arm %s again: %d fixture images looked up although its cell image was there", arm.Name, n)
		}
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

// tamperSkill changes a byte of the SKILL.md in the store's snapshot of the
// skill tree, keeping its size, as a disk or a hand might after it
// was pinned; it returns the file's path and its new bytes.
func tamperSkill(t *testing.T, st *store.Store, tree digest.Digest) (string, []byte) {
	t.Helper()
	snap := filepath.Join(st.TreeDir(tree), "SKILL.md")
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-2] ^= 1
	if err := os.Chmod(snap, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snap, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return snap, b
}

// pinnedCase is the "pinned" suite over a fixture of its own (so that no
// other test's images are found), its first case's inputs pinned for every
// arm into a fresh store.
func pinnedCase(t *testing.T) (*docker.Engine, *plan.Plan, *store.Store, plan.PlanCase) {
	t.Helper()
	e := dockertest.Engine(t)
	s := copySuite(t, e, "pinned")
	if err := os.WriteFile(filepath.Join(s.Dir, "fx", "nonce.txt"), []byte(dockertest.RandomHex(t)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.CompileDir(s.Dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, s.Dir))
	}
	st, err := store.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pc := p.Cases[0]
	in := newInputs(p, s.Dir, st)
	for _, arm := range p.Arms {
		if err := in.add(pc, arm); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.pin(); err != nil {
		t.Fatal(err)
	}
	return e, p, st, pc
}

// TestCaseImagesBuiltTogether: when the run says which arms of a case it will ask for,
// the first cell to ask builds the case's fixture image and, for its arms with skills,
// the image above it in one go, or that image alone on the fixture image it finds, and
// the other cells find theirs built; they are the images built one by one, ID for ID,
// under the same tags and keys.
func TestCaseImagesBuiltTogether(t *testing.T) {
	e, p, st, pc := pinnedCase(t)
	ctx := context.Background()
	together := images.New(dockerBackend{e}, p, st, io.Discard)
	agentRef, agentID, _, err := together.AgentImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range p.Arms {
		together.Expect(pc, arm)
	}
	first, _, err := together.CellImage(ctx, pc, p.Arms[0])
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, arm := range p.Arms {
		ref := images.KeyRef(together.CellKey(pc, arm, agentID))
		id, labels, ok, err := e.ImageLabels(ctx, ref)
		if err != nil || !ok || !keyNamesTag(labels[docker.LabelCellKey], ref) || labels[docker.LabelSuite] != p.Suite.Name {
			t.Fatalf("arm %s: %s after the first cell's build: %v %v labels %v", arm.Name, ref, ok, err, labels)
		}
		ids[arm.Name] = id
	}
	if n := len(together.FixtureRefs()); n != 1 {
		t.Errorf("%d fixture images, want 1", n)
	}
	for _, arm := range p.Arms {
		ref, id, err := together.CellImage(ctx, pc, arm)
		if err != nil || id != ids[arm.Name] || arm.Name == p.Arms[0].Name && ref != first {
			t.Errorf("arm %s: %s %s %v, built %s", arm.Name, ref, id, err, ids[arm.Name])
		}
	}
	if made := together.Unclaimed(); len(made) != 0 {
		t.Errorf("made still holds %v once every cell asked", made)
	}

	// The skills image removed and the fixture image kept: the first cell to ask builds
	// it again, on the fixture image.
	removeArms := func() {
		t.Helper()
		for _, arm := range p.Arms {
			if len(arm.Skills) == 0 {
				continue // its image is the fixture's
			}
			if _, err := e.RemoveImages(ctx, docker.LabelCellKey+"="+together.CellKey(pc, arm, agentID).String()); err != nil {
				t.Fatal(err)
			}
		}
	}
	removeArms()
	onFixture := images.New(dockerBackend{e}, p, st, io.Discard)
	for _, arm := range p.Arms {
		onFixture.Expect(pc, arm)
	}
	if _, _, err := onFixture.CellImage(ctx, pc, p.Arms[0]); err != nil {
		t.Fatal(err)
	}
	for _, arm := range p.Arms {
		if id, _, ok, err := e.ImageLabels(ctx, images.KeyRef(together.CellKey(pc, arm, agentID))); err != nil || !ok || id != ids[arm.Name] {
			t.Errorf("arm %s on the fixture image found: %s %v %v after the first cell's build, built together %s", arm.Name, id, ok, err, ids[arm.Name])
		}
	}

	// Removed, and built again one by one: the same images.
	removeArms()
	fixtureRef, fixtureID, err := together.FixtureImage(ctx, pc, agentRef, agentID, pc.Environment)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.RemoveImages(ctx, docker.LabelCellKey+"="+mustLabel(t, e, fixtureRef)); err != nil {
		t.Fatal(err)
	}
	alone := images.New(dockerBackend{e}, p, st, io.Discard)
	for _, arm := range p.Arms {
		_, id, err := alone.CellImage(ctx, pc, arm)
		if err != nil || id != ids[arm.Name] {
			t.Errorf("arm %s one by one: %s %v, built together %s", arm.Name, id, err, ids[arm.Name])
		}
	}
	if ref, id, err := alone.FixtureImage(ctx, pc, agentRef, agentID, pc.Environment); err != nil || ref != fixtureRef || id != fixtureID {
		t.Errorf("fixture one by one: %s %s %v, built together %s %s", ref, id, err, fixtureRef, fixtureID)
	}
}
