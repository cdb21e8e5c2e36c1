package runner

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/skillgate/skillgate/runner/backend"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/agent"

	"github.com/skillgate/skillgate/runner/docker"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// owner parses an agent's "uid[:gid]".
func owner(user string) (uid, gid int, err error) {
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

// images builds each cell image once: for one (agent image, fixture) every
// trial of every arm starts a container from the same image or the one layer
// above it that holds the skills folder, so a trial's setup does not grow with
// the fixture's size nor a case's images with its arms. The arm's skills are
// not in an image: each cell gets them read-only from the store's verified
// snapshots (skillTrees).
type images struct {
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

// newImages is the image builder of a plan's cells.
func newImages(e backend.Backend, p *plan.Plan, st *store.Store, log io.Writer) *images {
	return &images{engine: e, plan: p, store: st, log: log, agent: map[string]*imageBuild{}, cells: map[digest.Digest]*imageBuild{}, fixtures: map[digest.Digest]*imageBuild{},
		expected: map[string][]plan.PlanArm{}, made: map[digest.Digest]string{}, verified: map[digest.Digest]*verifiedTree{}}
}

// layersBuilder is a backend that builds images one layer above another in one go
// (docker.Engine.BuildImages), paying the engine's cost of an image build once.
type layersBuilder interface {
	BuildImages(ctx context.Context, builds []docker.ImageBuild) ([]string, error)
}

// expect says that the run will ask for the cell image of pc and arm, in pc's
// environment: when the case's fixture image is built and an expected arm has skills,
// the image above it for the arms with skills is built with it, in one load of the
// engine, rather than in a load of its own as its first cell asks.
func (im *images) expect(pc plan.PlanCase, arm plan.PlanArm) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.expected[pc.ID] = append(im.expected[pc.ID], arm)
}

// agentImage resolves the agent's image: skillgate's own sandbox is built
// on demand; any other image must be present in the engine. version is
// the image's dev.skillgate.agent-version label, when it has one.
func (im *images) agentImage(ctx context.Context) (ref, id, version string, err error) {
	im.mu.Lock()
	b, ok := im.agent[im.plan.Agent.Image]
	if !ok {
		b = &imageBuild{}
		im.agent[im.plan.Agent.Image] = b
	}
	im.mu.Unlock()
	b.once.Do(func() {
		ref := im.plan.Agent.Image
		if ref == docker.SandboxImage || ref == docker.SandboxImage+":latest" {
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
			b.ref, b.id, b.version = ref, id, labels[docker.LabelAgentVersion]
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
func (im *images) cellImage(ctx context.Context, pc plan.PlanCase, arm plan.PlanArm) (ref, id string, err error) {
	return im.cellImageIn(ctx, pc, arm, pc.Environment)
}

// cellImageIn is the cell image of pc and arm on the agent's image in environment env (a
// run: check may name another environment than its cell's): the case's fixture image
// (fixtureImage), and for an arm with skills one layer above it (skillsContext).
func (im *images) cellImageIn(ctx context.Context, pc plan.PlanCase, arm plan.PlanArm, env string) (ref, id string, err error) {
	agentRef, agentID, _, err := im.agentImageIn(ctx, env)
	if err != nil {
		return "", "", err
	}
	if len(arm.Skills) == 0 {
		return im.fixtureImage(ctx, pc, agentRef, agentID, env)
	}
	kd := im.cellKey(pc, arm, agentID)
	b := im.keyedImage(ctx, im.cells, kd, func(ref string) (string, error) {
		for attempt := 0; ; attempt++ {
			fixtureRef, fixtureID, err := im.fixtureImage(ctx, pc, agentRef, agentID, env)
			if err != nil {
				return "", err
			}
			if id, ok := im.takeMade(kd); ok {
				return id, nil
			}
			id, err := im.buildSkillsImage(ctx, ref, kd, fixtureID, pc)
			if attempt > 0 || !errors.Is(err, docker.ErrImageMissing) {
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
func (im *images) takeMade(kd digest.Digest) (string, bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	id, ok := im.made[kd]
	delete(im.made, kd)
	return id, ok
}

// cellKey is the content key of the cell image of pc and arm on the agent image
// agentID: its tag and its LabelCellKey. An arm without skills runs the fixture image,
// of the fixture's key; every arm with skills the image above it with the skills folder.
func (im *images) cellKey(pc plan.PlanCase, arm plan.PlanArm, agentID string) digest.Digest {
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
func (im *images) fixtureKey(pc plan.PlanCase, agentID string) digest.Digest {
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

// keyRef is the tag of the cell or fixture image with content key kd.
func keyRef(kd digest.Digest) string {
	return docker.CellImageRepo + ":" + kd.Encoded()[:24]
}

// keyedImage finds or builds, once per run, the image whose content key is kd, in table
// (cell or fixture images): an image under the key's tag that carries the key is used;
// one without it (built by an older skillgate, or tagged by hand) is not trusted, and
// build makes it again under the tag.
func (im *images) keyedImage(ctx context.Context, table map[digest.Digest]*imageBuild, kd digest.Digest, build func(ref string) (string, error)) *imageBuild {
	im.mu.Lock()
	b, ok := table[kd]
	if !ok {
		b = &imageBuild{ref: keyRef(kd)}
		table[kd] = b
	}
	im.mu.Unlock()
	b.once.Do(func() {
		id, labels, ok, err := im.engine.ImageLabels(ctx, b.ref)
		if err != nil {
			b.err = err
			return
		}
		if ok && labels[docker.LabelCellKey] == kd.String() {
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
func (im *images) fixtureImage(ctx context.Context, pc plan.PlanCase, agentRef, agentID, env string) (ref, id string, err error) {
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
func (im *images) withCellImage(ctx context.Context, pc plan.PlanCase, arm plan.PlanArm, run func(ref, id string) error) error {
	for attempt := 0; ; attempt++ {
		ref, id, err := im.cellImage(ctx, pc, arm)
		if err != nil {
			return err
		}
		err = run(ref, id)
		if attempt > 0 || !errors.Is(err, docker.ErrImageMissing) {
			return err
		}
		fmt.Fprintf(im.log, "image %s was removed while in use; building it again\n", ref)
		im.forget(ref)
	}
}

// forget drops what the images know of the cell image ref, so the next cellImage
// inspects the engine again.
func (im *images) forget(ref string) {
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
func (im *images) forgetFixture(ref string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	for k, b := range im.fixtures {
		if b.ref == ref {
			delete(im.fixtures, k)
		}
	}
}

// snapshot is the store's verified copy of a tree the plan digested.
func (im *images) snapshot(what string, t plan.Tree) (string, error) {
	dir := im.store.TreeDir(t.Digest)
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
func (im *images) skillTrees(arm plan.PlanArm) ([]docker.Tree, error) {
	out := make([]docker.Tree, 0, len(arm.Skills))
	for _, k := range arm.Skills {
		sk := im.plan.Skills[k]
		dir, err := im.snapshot("skill "+k, sk.Tree)
		if err == nil {
			err = im.verify(dir, sk.Tree)
		}
		if err != nil {
			return nil, fmt.Errorf("give arm %s its skills: %w", arm.Name, err)
		}
		out = append(out, docker.Tree{Host: dir, Path: path.Join(docker.Workspace, im.plan.Agent.SkillsDir, sk.Name)})
	}
	return out, nil
}

// verify checks the snapshot dir of tree t, once per run.
func (im *images) verify(dir string, t plan.Tree) error {
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

// buildFixture builds the fixture image: the workspace folder with the fixture's files,
// then the overlay's, owned by the agent's user, and the agent kind's files, the same for
// every arm. In the case's own environment, when the run expects an arm with skills and
// the engine lacks their image, that image is built with it in one go where the backend
// can (layersBuilder); its ID waits in made for its cells. When that fails, the fixture
// image is built alone, and the skills image's own build reports its error.
func (im *images) buildFixture(ctx context.Context, tag string, key digest.Digest, agentRef, agentID, env string, pc plan.PlanCase) (string, error) {
	bc, err := im.fixtureContext(agentRef, pc)
	if err != nil {
		return "", fmt.Errorf("build fixture image for %s: %w", pc.ID, err)
	}
	labels := cellLabels(im.plan, key)
	if lb, ok := im.engine.(layersBuilder); ok && env == pc.Environment {
		if sb, kd, ok := im.missingSkillsImage(ctx, pc, agentID, tag); ok {
			ids, err := lb.BuildImages(ctx, []docker.ImageBuild{{Tag: tag, Labels: labels, Context: bc}, sb})
			if err == nil {
				im.keepMade([]digest.Digest{kd}, ids[1:])
				return ids[0], nil
			}
		}
	}
	id, err := im.engine.BuildImage(ctx, tag, labels, bc)
	if err != nil {
		return "", fmt.Errorf("build fixture image for %s: %w", pc.ID, err)
	}
	return id, nil
}

// missingSkillsImage is the build of pc's skills image on the fixture image from, and its
// key, when the run expects an arm of pc with skills and the engine lacks the image.
func (im *images) missingSkillsImage(ctx context.Context, pc plan.PlanCase, agentID, from string) (docker.ImageBuild, digest.Digest, bool) {
	im.mu.Lock()
	arms := slices.Clone(im.expected[pc.ID])
	im.mu.Unlock()
	i := slices.IndexFunc(arms, func(a plan.PlanArm) bool { return len(a.Skills) > 0 })
	if i < 0 {
		return docker.ImageBuild{}, "", false
	}
	kd := im.cellKey(pc, arms[i], agentID)
	if _, l, ok, err := im.engine.ImageLabels(ctx, keyRef(kd)); err != nil || ok && l[docker.LabelCellKey] == kd.String() {
		return docker.ImageBuild{}, "", false
	}
	bc, err := im.skillsContext(from)
	if err != nil {
		return docker.ImageBuild{}, "", false // its own build reports why
	}
	return docker.ImageBuild{Tag: keyRef(kd), Labels: cellLabels(im.plan, kd), Context: bc}, kd, true
}

// keepMade keeps the IDs of cell images built before their cells ask, by key.
func (im *images) keepMade(keys []digest.Digest, ids []string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	for i, kd := range keys {
		im.made[kd] = ids[i]
	}
}

// cellLabels are the labels of the cell or fixture image with content key kd.
func cellLabels(p *plan.Plan, kd digest.Digest) map[string]string {
	return map[string]string{docker.LabelImage: "cell", docker.LabelSuite: p.Suite.Name, docker.LabelCellKey: kd.String()}
}

// fixtureContext is the build context of pc's fixture image on agentRef.
func (im *images) fixtureContext(agentRef string, pc plan.PlanCase) (*docker.BuildContext, error) {
	uid, gid, err := owner(im.plan.Agent.User)
	if err != nil {
		return nil, err
	}
	bc := docker.NewBuildContext("FROM " + agentRef + "\nADD " + docker.LayerTar + " /\n")
	bc.AddDir(docker.Workspace, 0o755, uid, gid)
	// The overlay's files, added after the fixture's, replace them.
	for _, layer := range im.plan.FixtureLayers(pc) {
		dir, err := im.snapshot(layer.What, layer.Tree)
		if err == nil {
			err = bc.AddTree(docker.Workspace, dir, treeFiles(layer.Tree), uid, gid)
		}
		if err != nil {
			return nil, err
		}
	}
	for p, data := range agentFiles(im.plan) {
		dir := "/"
		for _, part := range strings.Split(strings.Trim(path.Dir(p), "/"), "/") {
			dir = path.Join(dir, part)
			if strings.HasPrefix(dir, agent.Home) {
				bc.AddDir(dir, 0o755, uid, gid)
			}
		}
		bc.AddFile(p, 0o644, uid, gid, data)
	}
	return bc, nil
}

// buildSkillsImage builds the cell image of pc's arms with skills on its fixture image
// (named by ID, so a tag moved since cannot change what it is built on): one layer
// (skillsContext), which the engine loads without a build step (docker.Engine.BuildImage).
func (im *images) buildSkillsImage(ctx context.Context, tag string, key digest.Digest, fixtureID string, pc plan.PlanCase) (string, error) {
	bc, err := im.skillsContext(fixtureID)
	if err != nil {
		return "", err
	}
	id, err := im.engine.BuildImage(ctx, tag, cellLabels(im.plan, key), bc)
	if err != nil {
		return "", fmt.Errorf("build cell image for %s: %w", pc.ID, err)
	}
	return id, nil
}

// skillsContext is the build context of the cell image of the arms with skills on the
// fixture image from: one layer of the workspace and every folder leading to the agent's
// skills folder, owned by the agent's user, which a cell's skills are bound inside, so
// that the agent may write there as it would in its own checkout. An arm without skills
// has no such folder: its workspace is the fixture's alone.
func (im *images) skillsContext(from string) (*docker.BuildContext, error) {
	uid, gid, err := owner(im.plan.Agent.User)
	if err != nil {
		return nil, err
	}
	bc := docker.NewBuildContext("FROM " + from + "\nADD " + docker.LayerTar + " /\n")
	bc.AddDir(docker.Workspace, 0o755, uid, gid)
	dir := docker.Workspace
	for _, part := range strings.Split(im.plan.Agent.SkillsDir, "/") {
		dir = path.Join(dir, part)
		bc.AddDir(dir, 0o755, uid, gid)
	}
	return bc, nil
}

// Where a cell finds its prompt and seed conversation: root-owned files it can read and
// never change. A session of several turns (a case with replies) is run by SessionFile,
// each reply that is too large for the command line read from its own file; a report's
// JSON Schema is in ReportSchemaFile.
const (
	PromptFile       = "/skillgate-input/prompt.txt"
	SeedFile         = "/skillgate-input/seed.json"
	SessionFile      = "/skillgate-input/session.sh"
	ReportSchemaFile = "/skillgate-input/report-schema.json"
)

// replyFile is where the reply of turn n (from 1: the first reply) is, when it is too
// large for the command line.
func replyFile(n int) string { return fmt.Sprintf("/skillgate-input/reply-%d.txt", n) }

// cellInput is what a cell's agent is asked: the prompt, the seed conversation as JSON,
// the user's replies, and whether they are small enough for its environment and command
// line.
type cellInput struct {
	prompt  string
	seed    []byte
	replies []string
	session string // the session's ID, for a case with replies
	inline  bool
	max     int64 // limits.promptArg
}

func newCellInput(p *plan.Plan, pc plan.PlanCase, arm plan.PlanArm) (cellInput, error) {
	in := cellInput{prompt: plan.Prompt(p, pc, arm), replies: pc.Replies}
	if len(pc.Seed) > 0 {
		in.seed, _ = json.Marshal(pc.Seed)
	}
	max, err := suite.ParseBytes(p.Limits.PromptArg)
	if err != nil {
		return in, fmt.Errorf("read limits.promptArg: %w", err)
	}
	in.max = max
	in.inline = int64(len(in.prompt)) <= max && int64(len(in.seed)) <= max
	return in, nil
}

// files are the prompt and seed files of the cell.
func (in cellInput) files() []docker.SpecFile {
	fs := []docker.SpecFile{{Path: PromptFile, Mode: 0o444, Data: []byte(in.prompt)}}
	if in.seed != nil {
		fs = append(fs, docker.SpecFile{Path: SeedFile, Mode: 0o444, Data: in.seed})
	}
	return fs
}

// cellEnv is the agent's whole environment: nothing of the host's. The environment's env
// comes first, so the agent's own env wins over it.
func cellEnv(p *plan.Plan, pc plan.PlanCase, arm plan.PlanArm, in cellInput) []string {
	env := environmentEnv(p, pc.Environment)
	env = append(env, "SKILLGATE_PROMPT_FILE="+PromptFile)
	if in.inline {
		env = append(env, "SKILLGATE_PROMPT="+in.prompt)
	}
	if in.seed != nil {
		env = append(env, "SKILLGATE_SEED_FILE="+SeedFile)
		if in.inline {
			env = append(env, "SKILLGATE_SEED="+string(in.seed))
		}
	}
	if len(arm.Skills) > 0 {
		env = append(env, "SKILLGATE_SKILLS_DIR="+path.Join(docker.Workspace, p.Agent.SkillsDir))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Agent.Env)) {
		// "" leaves out a variable a preset sets (see schema/agents).
		if v := p.Agent.Env[k]; v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// PromptArg is the argument that stands for the prompt in an agent's command.
const PromptArg = "{{prompt}}"

// The arguments of agent.reportArgs that stand for the report's JSON Schema: as JSON
// text, and as the path of a file holding it.
const (
	SchemaArg     = "{{schema}}"
	SchemaFileArg = "{{schemaFile}}"
)

// cellCommand is what the cell runs: the agent's command with the prompt in it, and the
// report's flags when a report is asked for. A prompt too large for the command line
// goes to the agent's standard input instead, when its kind's CLI reads it there (Claude
// Code when no prompt argument is given, Codex when the argument is "-"). It returns the
// standard input to give, or nil, and the files the command reads.
//
// A case with replies is a session of several turns: the cell runs a script
// (SessionFile) that starts the command, and after it ends sends each reply with the
// agent's resume command (the first turn given agent.sessionArgs, {{session}} in both
// the cell's SessionID), in the same container, through the same gateway, stopping at
// the first turn that fails, with its exit code. Between turns it writes
// agent.TurnMarker on a line of its own to stdout (after a newline, so a last line
// without one stays whole), so a plain transcript tells the turns apart.
func cellCommand(p *plan.Plan, in cellInput) ([]string, []byte, []docker.SpecFile, error) {
	var files []docker.SpecFile
	var extra []string
	if r := p.Agent.Report; r != nil {
		schema, err := json.Marshal(r.Schema)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("build the agent's command: encode agent.report.schema: %w", err)
		}
		files = append(files, docker.SpecFile{Path: ReportSchemaFile, Mode: 0o444, Data: schema})
		rep := strings.NewReplacer(SchemaArg, string(schema), SchemaFileArg, ReportSchemaFile)
		for _, a := range p.Agent.ReportArgs {
			extra = append(extra, rep.Replace(a))
		}
	}
	first, stdin, err := turnCommand(p, p.Agent.Command, in.prompt, in.inline)
	if err != nil {
		return nil, nil, nil, err
	}
	first = append(first, extra...)
	if len(in.replies) == 0 {
		return first, stdin, files, nil
	}
	session := strings.NewReplacer(suite.SessionArg, in.session)
	for _, a := range p.Agent.SessionArgs {
		first = append(first, session.Replace(a))
	}
	var b strings.Builder
	b.WriteString("# The session of a case with replies: each turn starts when the one before it ends.\n")
	fmt.Fprintf(&b, "%s || exit $?\n", shellCommand(first))
	for i, reply := range in.replies {
		inline := int64(len(reply)) <= in.max
		cmd, replyIn, err := turnCommand(p, p.Agent.Resume, reply, inline)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("reply %d: %w", i+1, err)
		}
		for j, a := range cmd {
			cmd[j] = session.Replace(a)
		}
		cmd = append(cmd, extra...)
		from := "/dev/null"
		if replyIn != nil {
			from = replyFile(i + 1)
			files = append(files, docker.SpecFile{Path: from, Mode: 0o444, Data: replyIn})
		}
		fmt.Fprintf(&b, "printf '\\n%%s\\n' %s\n", shellQuote(agent.TurnMarker))
		fmt.Fprintf(&b, "%s <%s || exit $?\n", shellCommand(cmd), from)
	}
	files = append(files, docker.SpecFile{Path: SessionFile, Mode: 0o444, Data: []byte(b.String())})
	return []string{"/bin/sh", SessionFile}, stdin, files, nil
}

// turnCommand is command with text as its {{prompt}}, or, when text is not inline or
// the agent's kind always takes it there, the command that reads it on its standard
// input, and that input.
func turnCommand(p *plan.Plan, command []string, text string, inline bool) ([]string, []byte, error) {
	kind := agent.Of(p.Agent.Kind)
	out := make([]string, 0, len(command))
	var stdin []byte
	for _, a := range command {
		if (inline && !kind.StdinAlways) || !strings.Contains(a, PromptArg) {
			out = append(out, strings.ReplaceAll(a, PromptArg, text))
			continue
		}
		if a != PromptArg || !kind.Stdin {
			return nil, nil, fmt.Errorf("build the agent's command: its prompt (%d bytes) is over limits.promptArg (%s) for the command line; read it from $SKILLGATE_PROMPT_FILE instead of {{prompt}}", len(text), p.Limits.PromptArg)
		}
		out, stdin = append(out, kind.StdinArgs...), []byte(text)
	}
	return out, stdin, nil
}

// SessionID is the ID of the session of the cell with rollout key k, for a case with
// replies: a UUID (version 4 in form, its bits from the key), the same in every run of
// the cell, so a session resumed by ID never depends on what the first turn printed.
func SessionID(k digest.Digest) string {
	u := sha256.Sum256([]byte(k.String()))
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// shellCommand quotes args for sh, each as one word.
func shellCommand(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// shellQuote is s as one sh word, byte for byte.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// agentFiles are the files the plan's agent kind needs in its cell images.
func agentFiles(p *plan.Plan) map[string][]byte {
	if files := agent.Of(p.Agent.Kind).Files; files != nil {
		return files(p.Agent.Model)
	}
	return nil
}

// treeFiles are a tree's files as a build context verifies them.
func treeFiles(t plan.Tree) map[string]docker.TreeFile {
	files := make(map[string]docker.TreeFile, len(t.Files))
	for p, e := range t.Files {
		files[p] = docker.TreeFile(e)
	}
	return files
}
