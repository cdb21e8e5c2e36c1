package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// Answer is a stored rollout's final answer as the agent gave it, byte for byte.
func (s *Store) Answer(ro *Rollout) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(s.RolloutDir(ro.Key), FileAnswer))
	if errors.Is(err, fs.ErrNotExist) {
		return []byte(ro.Answer), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read answer of %s: %w", ro.Cell, err)
	}
	return b, nil
}

// World is a stored rollout's final workspace: the plan's fixture and skill trees, read
// from their verified snapshots in the store, and the stored changes. A skill stored
// without its snapshot is read from the suite folder.
func (s *Store) World(p *plan.Plan, suiteDir string, pc plan.PlanCase, arm plan.PlanArm, ro *Rollout) grade.World {
	w := grade.World{Changed: filepath.Join(s.RolloutDir(ro.Key), DirFiles), Changes: ro.Changes}
	if ro.Setup != nil {
		w.Baseline = ro.Setup.Changes
	}
	if pc.Fixture != "" {
		t := p.Fixtures[path.Clean(pc.Fixture)]
		w.Fixture, w.FixtureTree = s.TreeDir(pc.FixtureDigest), &t // the verified snapshot, not the live folder
	}
	if pc.Overlay != "" {
		t := p.Fixtures[path.Clean(pc.Overlay)]
		w.Overlay, w.OverlayTree = s.TreeDir(pc.OverlayDigest), &t
	}
	for _, k := range arm.Skills {
		sk := p.Skills[k]
		t := sk.Tree
		dir := s.TreeDir(sk.Digest)
		if _, err := os.Stat(dir); err != nil {
			dir = filepath.Join(suiteDir, filepath.FromSlash(sk.Path)) // a rollout stored without its run
		}
		w.Skills = append(w.Skills, grade.WorldSkill{At: path.Join(p.Agent.SkillsDir, sk.Name), Dir: dir, Tree: &t})
	}
	return w
}
