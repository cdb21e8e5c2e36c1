// Package skillopt reads SkillOpt's exported workspaces into suites: each
// workspace's workspace.json and data/*.jsonl (which CUE cannot read) into
// formats.skillopt.read, with positions in the user's files, after checking
// the export the way SkillOpt's verifyWorkspace does; the CUE package
// skillgate.dev/schema/formats/skillopt maps what was read to skills, arms
// and cases. Import writes the small suite that names a workspace.
package skillopt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	cueerrors "cuelang.org/go/cue/errors"
)

// FileSuite is the suite file Import writes.
const FileSuite = "suite.cue"

// Import writes into out a suite naming the exported workspace at src (a
// folder holding workspace.json), and returns the files written. Beside an
// evaluate workspace, a release workspace of the same export (SkillOpt
// writes .skillopt/SKILL/MODE) is named too, for a release report; the
// fixtures folder of SkillOpt's repository (evals/fixtures, three levels
// up) when it is there.
func Import(src, out string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(src, FileManifest))
	if err != nil {
		return nil, fmt.Errorf("import %s: not an exported SkillOpt workspace: %w", src, err)
	}
	_, parsed, bad, errs := parseManifest(filepath.Join(src, FileManifest), b)
	if errs != nil {
		return nil, cueerrors.Promote(errs, "import "+src)
	}
	if bad != nil {
		return nil, fmt.Errorf("import %s: %s: %w", src, FileManifest, bad)
	}
	w := *parsed
	target := filepath.Join(out, FileSuite)
	if _, err := os.Stat(target); err == nil {
		return nil, fmt.Errorf("import %s: %s already exists; choose another folder", src, target)
	}
	rel := func(p string) (string, error) {
		absOut, err := filepath.Abs(out)
		if err != nil {
			return "", err
		}
		absP, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		r, err := filepath.Rel(absOut, absP)
		return filepath.ToSlash(r), err
	}
	ws, err := rel(src)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	lines := []string{fmt.Sprintf("\t\tworkspace: %q", ws)}
	if w.Mode == ModeEvaluate {
		release := filepath.Join(filepath.Dir(filepath.Clean(src)), ModeRelease)
		if _, err := os.Stat(filepath.Join(release, FileManifest)); err == nil {
			r, err := rel(release)
			if err != nil {
				return nil, fmt.Errorf("import %s: %w", src, err)
			}
			lines = append(lines, fmt.Sprintf("\t\trelease:   %q", r))
		}
	}
	fixtures := filepath.Join(src, "..", "..", "..", "evals", "fixtures")
	if st, err := os.Stat(fixtures); err == nil && st.IsDir() {
		r, err := rel(fixtures)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", src, err)
		}
		lines = append(lines, fmt.Sprintf("\t\tfixtures:  %q", r))
	} else if !errors.Is(err, fs.ErrNotExist) && err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	text := fmt.Sprintf(`package suite

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/formats/skillopt"
)

// SkillOpt's %s workspace of %s: its workspace.json and data/*.jsonl stay
// the source of truth, verified as SkillOpt's verifyWorkspace does before
// and after the rollouts. Arms: candidate (the target skill and its
// companions) and without-target (the companions alone).
schema.#Suite & skillopt.#Suite & {
	name: %q
	formats: skillopt: {
%s
	}
	agent:  agents.claudeCode & {model: "claude-sonnet-4-5"}
	policy: skillopt.Policy
}
`, w.Mode, w.TargetSkill, suiteName(w.TargetSkill), strings.Join(lines, "\n"))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	return []string{FileSuite}, nil
}

// suiteName is the suite's name for a target skill.
func suiteName(skill string) string {
	if skill == "" {
		return "skillopt"
	}
	return skill
}
