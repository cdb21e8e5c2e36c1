package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/skillgate/skillgate/runner/backend"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/agent"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// Owner parses an agent's "uid[:gid]".
func Owner(user string) (uid, gid int, err error) {
	u, g, hasGid := strings.Cut(user, ":")
	if uid, err = strconv.Atoi(u); err != nil {
		return 0, 0, fmt.Errorf("parse agent user %q: %w", user, err)
	}
	gid = uid
	if hasGid {
		if gid, err = strconv.Atoi(g); err != nil {
			return 0, 0, fmt.Errorf("parse agent user %q: %w", user, err)
		}
	}
	return uid, gid, nil
}

// Images builds each cell image once: for one (agent image, fixture) every
// trial of every arm starts a container from the same image or the one layer
// above it that holds the skills folder, so a trial's setup does not grow with
// the fixture's size nor a case's images with its arms. The arm's skills are
// not in an image: each cell gets them read-only from the store's verified
// snapshots (skillTrees).
type Images struct {
	engine backend.Backend
	plan   *plan.Plan
	// store holds the tree snapshots cell images are built from.
	store *store.Store
	log   io.Writer

	mu    sync.Mutex
	agent map[string]*imageBuild // by agent image ref, or "environment NAME"
	cells map[digest.Digest]*imageBuild
	// fixtures are the cell images of arms without skills, below those of
	// arms with skills: one per case's fixture on an agent image, whatever
	// the arms.
	fixtures map[digest.Digest]*imageBuild
	// expected are the arms whose cell images the run will ask for, by case
	// ID: a case's fixture image is built with its skills image when one of
	// them has skills (buildFixture); made are the IDs of those so built, by
	// cell key, until their cells ask.
	expected map[string][]plan.PlanArm
	made     map[digest.Digest]string
	envs     map[string]*imageBuild // environment images, by environment name
	debs     map[string]*imageBuild // Debian roots, by tag
	// verified are the skill snapshots checked against the plan, by tree digest.
	verified map[digest.Digest]*verifiedTree
}

// verifiedTree is one snapshot's check, made once per run.
type verifiedTree struct {
	once sync.Once
	err  error
}

type imageBuild struct {
	once sync.Once
	ref  string
	id   string
	// version is an agent image's LabelAgentVersion.
	version string
	err     error
}

// New is the image builder of a plan's cells.
func New(e backend.Backend, p *plan.Plan, st *store.Store, log io.Writer) *Images {
	return &Images{engine: e, plan: p, store: st, log: log, agent: map[string]*imageBuild{}, cells: map[digest.Digest]*imageBuild{}, fixtures: map[digest.Digest]*imageBuild{},
		expected: map[string][]plan.PlanArm{}, made: map[digest.Digest]string{}, verified: map[digest.Digest]*verifiedTree{}}
}

// layersBuilder is a backend that builds images one layer above another in one go
// (backend.Engine.BuildImages), paying the engine's cost of an image build once.
type layersBuilder interface {
	BuildImages(ctx context.Context, builds []backend.ImageBuild) ([]string, error)
}

// expect says that the run will ask for the cell image of pc and arm, in pc's
// environment: when the case's fixture image is built and an expected arm has skills,
// the image above it for the arms with skills is built with it, in one load of the
// engine, rather than in a load of its own as its first cell asks.
func (im *Images) Expect(pc plan.PlanCase, arm plan.PlanArm) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.expected[pc.ID] = append(im.expected[pc.ID], arm)
}

// agentImage resolves the agent's image: skillgate's own sandbox is built
// on demand; any other image must be present in the engine. version is
// the image's dev.skillgate.agent-version label, when it has one.
func (im *Images) AgentImage(ctx context.Context) (ref, id, version string, err error) {
	im.mu.Lock()
	b, ok := im.agent[im.plan.Agent.Image]
	if !ok {
		b = &imageBuild{}
		im.agent[im.plan.Agent.Image] = b
	}
	im.mu.Unlock()
	b.once.Do(func() {
		ref := im.plan.Agent.Image
		if ref == backend.SandboxImage || ref == backend.SandboxImage+":latest" {
			if ref, b.err = im.engine.EnsureSandbox(ctx); b.err != nil {
				return
			}
		}
		// skillgate's own agent images are built from their npm packages
		// when missing, so a suite naming one runs on a fresh machine.
		for _, kind := range agent.ImageKinds() {
			if version, ok := strings.CutPrefix(ref, agent.ImageRepo(kind)+":"); ok {
				if _, exists, err := im.engine.ImageExists(ctx, ref); err == nil && !exists {
					if _, b.err = agent.BuildImage(ctx, im.engine, kind, version, im.log); b.err != nil {
						return
					}
				}
			}
		}
		id, labels, ok, err := im.engine.ImageLabels(ctx, ref)
		switch {
		case err != nil:
			b.err = err
		case !ok:
			b.err = fmt.Errorf("find agent image %s: not in the Docker engine; build or load it first (no registry is used)", ref)
		default:
			b.ref, b.id, b.version = ref, id, labels[backend.LabelAgentVersion]
		}
	})
	return b.ref, b.id, b.version, b.err
}

// cellImage returns the image a cell of pc and arm starts from, on top of the agent
// image, building it from the store's verified snapshots if the engine lacks it: the
// case's fixture image for an arm without skills, else that image and one layer of the
// folders leading to the agent's skills folder, the same for every arm with skills (the
// skills themselves come with the container: skillTrees). Its tag and its LabelCellKey
// derive from the agent image ID and the plan's tree digests: once every file is
// verified while the image is built, that is its content.
func (im *Images) CellImage(ctx context.Context, pc plan.PlanCase, arm plan.PlanArm) (ref, id string, err error) {
	return im.CellImageIn(ctx, pc, arm, pc.Environment)
}

// cellImageIn is the cell image of pc and arm on the agent's image in environment env (a
// run: check may name another environment than its cell's): the case's fixture image
// (fixtureImage), and for an arm with skills one layer above it (skillsContext).
func (im *Images) CellImageIn(ctx context.Context, pc plan.PlanCase, arm plan.PlanArm, env string) (ref, id string, err error) {
	agentRef, agentID, _, err := im.AgentImageIn(ctx, env)
	if err != nil {
		return "", "", err
	}
	if len(arm.Skills) == 0 {
		return im.FixtureImage(ctx, pc, agentRef, agentID, env)
	}
	kd := im.CellKey(pc, arm, agentID)
	b := im.keyedImage(ctx, im.cells, kd, func(ref string) (string, error) {
		for attempt := 0; ; attempt++ {
			fixtureRef, fixtureID, err := im.FixtureImage(ctx, pc, agentRef, agentID, env)
			if err != nil {
				return "", err
			}
			if id, ok := im.takeMade(kd); ok {
				return id, nil
			}
			id, err := im.buildSkillsImage(ctx, ref, kd, fixtureID, pc)
			if attempt > 0 || !errors.Is(err, backend.ErrImageMissing) {
				return id, err
			}
			// The fixture image was removed since it was found: built again.
			fmt.Fprintf(im.log, "image %s was removed while in use; building it again\n", fixtureRef)
			im.forgetFixture(fixtureRef)
		}
	})
	// Found in the engine, or built: what its fixture's build made of it is used.
	im.takeMade(kd)
	return b.ref, b.id, b.err
}

// takeMade returns, and forgets, the ID of the cell image with key kd that its case's
// fixture image was built with.
func (im *Images) takeMade(kd digest.Digest) (string, bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	id, ok := im.made[kd]
	delete(im.made, kd)
	return id, ok
}

// cellKey is the content key of the cell image of pc and arm on the agent image
// agentID: its tag and its LabelCellKey. An arm without skills runs the fixture image,
// of the fixture's key; every arm with skills the image above it with the skills folder.
func (im *Images) CellKey(pc plan.PlanCase, arm plan.PlanArm, agentID string) digest.Digest {
	if len(arm.Skills) == 0 {
		return im.fixtureKey(pc, agentID)
	}
	key := struct {
		Image     string        `json:"image"`
		Fixture   digest.Digest `json:"fixture"`
		User      string        `json:"user"`
		SkillsDir string        `json:"skillsDir"`
	}{"skills", im.fixtureKey(pc, agentID), im.plan.Agent.User, im.plan.Agent.SkillsDir}
	kb, _ := json.Marshal(key)
	return digest.FromBytes(kb)
}

// fixtureKey is the content key of pc's fixture image on the agent image agentID: the
// agent image ID, the agent's user, the fixture's trees and the agent's files.
func (im *Images) fixtureKey(pc plan.PlanCase, agentID string) digest.Digest {
	key := struct {
		Image   string            `json:"image"`
		Agent   string            `json:"agent"`
		User    string            `json:"user"`
		Fixture digest.Digest     `json:"fixture"`
		Files   map[string][]byte `json:"files,omitempty"`
	}{"fixture", agentID, im.plan.Agent.User, plan.WorkspaceDigest(pc), agentFiles(im.plan)}
	kb, _ := json.Marshal(key)
	return digest.FromBytes(kb)
}

// KeyRef is the tag of the cell or fixture image with content key kd.
func KeyRef(kd digest.Digest) string {
	return backend.CellImageRepo + ":" + kd.Encoded()[:24]
}

// keyedImage finds or builds, once per run, the image whose content key is kd, in table
// (cell or fixture images): an image under the key's tag that carries the key is used;
// one without it (built by an older skillgate, or tagged by hand) is not trusted, and
// build makes it again under the tag.
func (im *Images) keyedImage(ctx context.Context, table map[digest.Digest]*imageBuild, kd digest.Digest, build func(ref string) (string, error)) *imageBuild {
	im.mu.Lock()
	b, ok := table[kd]
	if !ok {
		b = &imageBuild{ref: KeyRef(kd)}
		table[kd] = b
	}
	im.mu.Unlock()
	b.once.Do(func() {
		id, labels, ok, err := im.engine.ImageLabels(ctx, b.ref)
		if err != nil {
			b.err = err
			return
		}
		if ok && labels[backend.LabelCellKey] == kd.String() {
			b.id = id
			return
		}
		b.id, b.err = build(b.ref)
	})
	return b
}

// fixtureImage returns the image holding the case's fixture (and overlay) and the agent
// kind's files on the agent image: the cell image of every arm without skills, and below
// that of every arm with skills, built and stored once however many arms there are. Its
// key (fixtureKey) is, like a cell image's, its tag and its LabelCellKey. env is the
// environment of agentRef.
func (im *Images) FixtureImage(ctx context.Context, pc plan.PlanCase, agentRef, agentID, env string) (ref, id string, err error) {
	kd := im.fixtureKey(pc, agentID)

	b := im.keyedImage(ctx, im.fixtures, kd, func(ref string) (string, error) {
		return im.buildFixture(ctx, ref, kd, agentRef, agentID, env, pc)
	})
	return b.ref, b.id, b.err
}

// withCellImage calls run with the cell image of pc and arm. When the engine lost the
// image between its check and the container's create (removed by gc, by hand, or by
// another process that built the same content), it forgets the image, builds it again
// from the verified snapshots, and calls run once more.
func (im *Images) WithCellImage(ctx context.Context, pc plan.PlanCase, arm plan.PlanArm, run func(ref, id string) error) error {
	for attempt := 0; ; attempt++ {
		ref, id, err := im.CellImage(ctx, pc, arm)
		if err != nil {
			return err
		}
		err = run(ref, id)
		if attempt > 0 || !errors.Is(err, backend.ErrImageMissing) {
			return err
		}
		fmt.Fprintf(im.log, "image %s was removed while in use; building it again\n", ref)
		im.Forget(ref)
	}
}

// forget drops what the images know of the cell image ref, so the next cellImage
// inspects the engine again.
func (im *Images) Forget(ref string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	for k, b := range im.cells {
		if b.ref == ref {
			delete(im.cells, k)
		}
	}
	// An arm without skills runs its fixture image.
	for k, b := range im.fixtures {
		if b.ref == ref {
			delete(im.fixtures, k)
		}
	}
}

// forgetFixture drops what the images know of the fixture image ref.
func (im *Images) forgetFixture(ref string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	for k, b := range im.fixtures {
		if b.ref == ref {
			delete(im.fixtures, k)
		}
	}
}

// snapshot is the store's verified copy of a tree the plan digested.
func (im *Images) snapshot(what string, t plan.Tree) (string, error) {
	dir := im.store.TreeDir(t.Digest)
	if err := im.store.AwaitTree(t.Digest); err != nil {
		return "", fmt.Errorf("place the snapshot of %s: %w", what, err)
	}
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("find the snapshot of %s: %w (inputs are pinned before the first cell)", what, err)
	}
	return dir, nil
}

// skillTrees are the arm's skills as its containers get them: each the store's snapshot
// of the skill's tree, verified against the plan once per run (every file hashed, nothing
// more in it), read-only at its folder in the agent's skills folder. No image holds a
// skill, so a case's images do not grow with its arms, and a snapshot that differs from
// the plan fails the cell before it starts, naming the file.
func (im *Images) SkillTrees(arm plan.PlanArm) ([]backend.Tree, error) {
	out := make([]backend.Tree, 0, len(arm.Skills))
	for _, k := range arm.Skills {
		sk := im.plan.Skills[k]
		dir, err := im.snapshot("skill "+k, sk.Tree)
		if err == nil {
			err = im.verify(dir, sk.Tree)
		}
		if err != nil {
			return nil, fmt.Errorf("give arm %s its skills: %w", arm.Name, err)
		}
		out = append(out, backend.Tree{Host: dir, Path: path.Join(backend.Workspace, im.plan.Agent.SkillsDir, sk.Name)})
	}
	return out, nil
}

// verify checks the snapshot dir of tree t, once per run.
func (im *Images) verify(dir string, t plan.Tree) error {
	im.mu.Lock()
	v, ok := im.verified[t.Digest]
	if !ok {
		v = &verifiedTree{}
		im.verified[t.Digest] = v
	}
	im.mu.Unlock()
	v.once.Do(func() { v.err = store.VerifyTree(dir, t) })
	return v.err
}

// agentFiles are the files the plan's agent kind needs in its cell images.
func agentFiles(p *plan.Plan) map[string][]byte {
	if files := agent.Of(p.Agent.Kind).Files; files != nil {
		return files(p.Agent.Model)
	}
	return nil
}

// TreeFiles are a tree's files as a build context verifies them.
func TreeFiles(t plan.Tree) map[string]backend.TreeFile {
	files := make(map[string]backend.TreeFile, len(t.Files))
	for p, e := range t.Files {
		files[p] = backend.TreeFile(e)
	}
	return files
}
