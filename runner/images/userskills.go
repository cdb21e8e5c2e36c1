package images

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/runner/agent"
	"github.com/skillgate/skillgate/runner/backend"
)

// userSkillTrees hide the user-level skill folders the agent's kind scans (see
// agent.Kind.UserSkillDirs) behind an empty, read-only folder in every cell, so that
// neither a baseline nor a skill arm finds a skill the image holds outside its
// workspace: an agent image layered on an environment, or a suite's own image, may
// hold some.
func (im *Images) UserSkillTrees() ([]backend.Tree, error) {
	dirs := agent.Of(im.plan.Agent.Kind).UserSkillDirs
	if len(dirs) == 0 {
		return nil, nil
	}
	empty, err := emptyFolder()
	if err != nil {
		return nil, fmt.Errorf("hide the agent's user-level skill folders: %w", err)
	}
	out := make([]backend.Tree, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, backend.Tree{Host: empty, Path: d})
	}
	return out, nil
}

// emptyFolder is a folder of this machine that holds nothing: USERCACHE/skillgate/empty,
// outside every run folder, whose records it would otherwise join. A folder found there
// with anything in it is refused, never emptied.
func emptyFolder() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, "skillgate", "empty")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if len(ents) > 0 {
		return "", fmt.Errorf("%s should be empty and holds %s", dir, ents[0].Name())
	}
	return dir, nil
}
