package images

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/runner/backend"

	"github.com/skillgate/skillgate/runner/agent"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// buildFixture builds the fixture image: the workspace folder with the fixture's files,
// then the overlay's, owned by the agent's user, and the agent kind's files, the same for
// every arm. In the case's own environment, when the run expects an arm with skills and
// the engine lacks their image, that image is built with it in one go where the backend
// can (layersBuilder); its ID waits in made for its cells. When that fails, the fixture
// image is built alone, and the skills image's own build reports its error.
func (im *Images) buildFixture(ctx context.Context, tag string, key digest.Digest, agentRef, agentID, env string, pc plan.PlanCase) (string, error) {
	bc, err := im.fixtureContext(agentRef, pc)
	if err != nil {
		return "", fmt.Errorf("build fixture image for %s: %w", pc.ID, err)
	}
	labels := cellLabels(im.plan, key)
	if lb, ok := im.engine.(layersBuilder); ok && env == pc.Environment {
		if sb, kd, ok := im.missingSkillsImage(ctx, pc, agentID, tag); ok {
			ids, err := lb.BuildImages(ctx, []backend.ImageBuild{{Tag: tag, Labels: labels, Context: bc}, sb})
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
func (im *Images) missingSkillsImage(ctx context.Context, pc plan.PlanCase, agentID, from string) (backend.ImageBuild, digest.Digest, bool) {
	im.mu.Lock()
	arms := slices.Clone(im.expected[pc.ID])
	im.mu.Unlock()
	i := slices.IndexFunc(arms, func(a plan.PlanArm) bool { return len(a.Skills) > 0 })
	if i < 0 {
		return backend.ImageBuild{}, "", false
	}
	kd := im.CellKey(pc, arms[i], agentID)
	if _, l, ok, err := im.engine.ImageLabels(ctx, KeyRef(kd)); err != nil || ok && l[backend.LabelCellKey] == kd.String() {
		return backend.ImageBuild{}, "", false
	}
	bc, err := im.skillsContext(from)
	if err != nil {
		return backend.ImageBuild{}, "", false // its own build reports why
	}
	return backend.ImageBuild{Tag: KeyRef(kd), Labels: cellLabels(im.plan, kd), Context: bc}, kd, true
}

// keepMade keeps the IDs of cell images built before their cells ask, by key.
func (im *Images) keepMade(keys []digest.Digest, ids []string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	for i, kd := range keys {
		im.made[kd] = ids[i]
	}
}

// cellLabels are the labels of the cell or fixture image with content key kd.
func cellLabels(p *plan.Plan, kd digest.Digest) map[string]string {
	return map[string]string{backend.LabelImage: "cell", backend.LabelSuite: p.Suite.Name, backend.LabelCellKey: kd.String()}
}

// fixtureContext is the build context of pc's fixture image on agentRef.
func (im *Images) fixtureContext(agentRef string, pc plan.PlanCase) (*backend.BuildContext, error) {
	uid, gid, err := Owner(im.plan.Agent.User)
	if err != nil {
		return nil, err
	}
	bc := backend.NewBuildContext("FROM " + agentRef + "\nADD " + backend.LayerTar + " /\n")
	bc.AddDir(backend.Workspace, 0o755, uid, gid)
	// The overlay's files, added after the fixture's, replace them.
	for _, layer := range im.plan.FixtureLayers(pc) {
		dir, err := im.snapshot(layer.What, layer.Tree)
		if err == nil {
			err = bc.AddTree(backend.Workspace, dir, TreeFiles(layer.Tree), uid, gid)
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
// (skillsContext), which the engine loads without a build step (backend.Engine.BuildImage).
func (im *Images) buildSkillsImage(ctx context.Context, tag string, key digest.Digest, fixtureID string, pc plan.PlanCase) (string, error) {
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
func (im *Images) skillsContext(from string) (*backend.BuildContext, error) {
	uid, gid, err := Owner(im.plan.Agent.User)
	if err != nil {
		return nil, err
	}
	bc := backend.NewBuildContext("FROM " + from + "\nADD " + backend.LayerTar + " /\n")
	bc.AddDir(backend.Workspace, 0o755, uid, gid)
	dir := backend.Workspace
	for _, part := range strings.Split(im.plan.Agent.SkillsDir, "/") {
		dir = path.Join(dir, part)
		bc.AddDir(dir, 0o755, uid, gid)
	}
	return bc, nil
}
