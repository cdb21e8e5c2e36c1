package runner

import (
	"context"
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

// images builds each cell image once: for one (agent image, fixture, arm
// skills) every trial starts a container from the same image, so a trial's
// setup does not grow with the fixture's size.
type images struct {
	engine backend
	plan   *plan.Plan
	// store holds the tree snapshots cell images are built from.
	store *store.Store
	log   io.Writer

	mu    sync.Mutex
	agent map[string]*imageBuild // by agent image ref, or "environment NAME"
	cells map[digest.Digest]*imageBuild
	envs  map[string]*imageBuild // environment images, by environment name
	debs  map[string]*imageBuild // Debian roots, by tag
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
func newImages(e backend, p *plan.Plan, st *store.Store, log io.Writer) *images {
	return &images{engine: e, plan: p, store: st, log: log, agent: map[string]*imageBuild{}, cells: map[digest.Digest]*imageBuild{}}
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

// cellImage returns the image holding the case's fixture and the arm's
// skills on top of the agent image, building it from the store's verified
// snapshots if the engine lacks it. Its tag and its LabelCellKey derive
// from the agent image ID and the plan's tree digests: once every file is
// verified while the image is built, that is its content.
func (im *images) cellImage(ctx context.Context, pc plan.PlanCase, arm plan.PlanArm) (ref, id string, err error) {
	return im.cellImageIn(ctx, pc, arm, pc.Environment)
}

// cellImageIn is the cell image of pc and arm on the agent's image in environment env (a
// run: check may name another environment than its cell's).
func (im *images) cellImageIn(ctx context.Context, pc plan.PlanCase, arm plan.PlanArm, env string) (ref, id string, err error) {
	agentRef, agentID, _, err := im.agentImageIn(ctx, env)
	if err != nil {
		return "", "", err
	}
	a := im.plan.Agent
	type skill struct {
		Name   string        `json:"name"`
		Digest digest.Digest `json:"digest"`
	}
	key := struct {
		Agent     string            `json:"agent"`
		User      string            `json:"user"`
		SkillsDir string            `json:"skillsDir"`
		Fixture   digest.Digest     `json:"fixture"`
		Skills    []skill           `json:"skills"`
		Files     map[string][]byte `json:"files,omitempty"`
	}{agentID, a.User, a.SkillsDir, pc.FixtureDigest, []skill{}, agentFiles(im.plan)}
	for _, k := range arm.Skills {
		key.Skills = append(key.Skills, skill{im.plan.Skills[k].Name, im.plan.Skills[k].Digest})
	}
	kb, _ := json.Marshal(key)
	kd := digest.FromBytes(kb)

	im.mu.Lock()
	b, ok := im.cells[kd]
	if !ok {
		b = &imageBuild{ref: docker.CellImageRepo + ":" + kd.Encoded()[:24]}
		im.cells[kd] = b
	}
	im.mu.Unlock()
	b.once.Do(func() {
		id, labels, ok, err := im.engine.ImageLabels(ctx, b.ref)
		if err != nil {
			b.err = err
			return
		}
		// An image under the tag without the key (built by an older
		// skillgate, or tagged by hand) is not trusted: it is rebuilt.
		if ok && labels[docker.LabelCellKey] == kd.String() {
			b.id = id
			return
		}
		b.id, b.err = im.build(ctx, b.ref, kd, agentRef, pc, arm)
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
}

// snapshot is the store's verified copy of a tree the plan digested.
func (im *images) snapshot(what string, t plan.Tree) (string, error) {
	dir := im.store.TreeDir(t.Digest)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("find the snapshot of %s: %w (inputs are pinned before the first cell)", what, err)
	}
	return dir, nil
}

func (im *images) build(ctx context.Context, tag string, key digest.Digest, agentRef string, pc plan.PlanCase, arm plan.PlanArm) (string, error) {
	uid, gid, err := owner(im.plan.Agent.User)
	if err != nil {
		return "", err
	}
	bc := docker.NewBuildContext("FROM " + agentRef + "\nADD " + docker.LayerTar + " /\n")
	bc.AddDir(docker.Workspace, 0o755, uid, gid)
	if pc.Fixture != "" {
		fx := path.Clean(pc.Fixture)
		t := im.plan.Fixtures[fx]
		dir, err := im.snapshot("fixture "+fx, t)
		if err == nil {
			err = bc.AddTree(docker.Workspace, dir, treeFiles(t), uid, gid)
		}
		if err != nil {
			return "", fmt.Errorf("build cell image for %s: %w", pc.ID, err)
		}
	}
	if len(arm.Skills) > 0 {
		dir := docker.Workspace
		for _, part := range strings.Split(im.plan.Agent.SkillsDir, "/") {
			dir = path.Join(dir, part)
			bc.AddDir(dir, 0o755, uid, gid)
		}
		for _, k := range arm.Skills {
			sk := im.plan.Skills[k]
			snap, err := im.snapshot("skill "+k, sk.Tree)
			if err == nil {
				err = bc.AddTree(path.Join(dir, sk.Name), snap, treeFiles(sk.Tree), uid, gid)
			}
			if err != nil {
				return "", fmt.Errorf("build cell image for arm %s: %w", arm.Name, err)
			}
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
	labels := map[string]string{docker.LabelImage: "cell", docker.LabelSuite: im.plan.Suite.Name, docker.LabelCellKey: key.String()}
	id, err := im.engine.BuildImage(ctx, tag, labels, bc)
	if err != nil {
		return "", fmt.Errorf("build cell image for %s/%s: %w", pc.ID, arm.Name, err)
	}
	return id, nil
}

// Where a cell finds its prompt and seed conversation: root-owned files it can read and
// never change.
const (
	PromptFile = "/skillgate-input/prompt.txt"
	SeedFile   = "/skillgate-input/seed.json"
)

// cellInput is what a cell's agent is asked: the prompt, the seed conversation as JSON,
// and whether they are small enough for its environment and command line.
type cellInput struct {
	prompt string
	seed   []byte
	inline bool
}

func newCellInput(p *plan.Plan, pc plan.PlanCase, arm plan.PlanArm) (cellInput, error) {
	in := cellInput{prompt: plan.Prompt(p, pc, arm)}
	if len(pc.Seed) > 0 {
		in.seed, _ = json.Marshal(pc.Seed)
	}
	max, err := suite.ParseBytes(p.Limits.PromptArg)
	if err != nil {
		return in, fmt.Errorf("read limits.promptArg: %w", err)
	}
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
		env = append(env, k+"="+p.Agent.Env[k])
	}
	return env
}

// PromptArg is the argument that stands for the prompt in an agent's command.
const PromptArg = "{{prompt}}"

// cellCommand substitutes the prompt into the agent's command. A prompt too large for the
// command line goes to the agent's standard input instead, when its kind's CLI reads it
// there (Claude Code when no prompt argument is given, Codex when the argument is "-").
// It returns the standard input to give, or nil.
func cellCommand(p *plan.Plan, in cellInput) ([]string, []byte, error) {
	kind := agent.Of(p.Agent.Kind)
	out := make([]string, 0, len(p.Agent.Command))
	var stdin []byte
	for _, a := range p.Agent.Command {
		if in.inline || !strings.Contains(a, PromptArg) {
			out = append(out, strings.ReplaceAll(a, PromptArg, in.prompt))
			continue
		}
		if a != PromptArg || !kind.Stdin {
			return nil, nil, fmt.Errorf("build the agent's command: its prompt (%d bytes) is over limits.promptArg (%s) for the command line; read it from $SKILLGATE_PROMPT_FILE instead of {{prompt}}", len(in.prompt), p.Limits.PromptArg)
		}
		out, stdin = append(out, kind.StdinArgs...), []byte(in.prompt)
	}
	return out, stdin, nil
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
