package contract

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/formats/gstack"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/spend"
	"github.com/skillgate/skillgate/runner/store"
)

// SkillEvalRefusals are the reasons gstack's contract refuses the run of
// plan p read from tasksFile, each an error: a paid run (a real provider)
// needs a matching tasks.lock.json and a spend cap (capSet: --spend-cap was
// given); a spend cap needs prices to count with. A dry run prints them; a
// real run stops on the first.
func SkillEvalRefusals(p *plan.Plan, tasksFile string, capSet bool, capUSD float64) []error {
	var refused []error
	if p.Agent.Provider == "anthropic" || p.Agent.Provider == "openai" || p.Agent.Provider == "gemini" {
		if err := gstack.CheckLock(tasksFile, p.Suite.Trials); err != nil {
			refused = append(refused, err)
		} else if !capSet {
			refused = append(refused, fmt.Errorf("skill-eval: a paid run needs --spend-cap USD"))
		}
	}
	if err := spend.CheckCap(p, capUSD); err != nil && p.Agent.Prices == nil {
		refused = append(refused, fmt.Errorf("skill-eval: no prices for model %s (skillgate.dev/schema/formats/gstack's #Prices lists the models it prices), so --spend-cap has nothing to count", p.Agent.Model))
	} else if err != nil {
		refused = append(refused, err)
	}
	return refused
}

// SkillEvalFolder is the run folder of plan p: out for a fresh run, which
// must hold none yet (unless dryRun), or resume's, which must hold a run
// of the same plan (the same tasks, arms, model and trials), so a resumed
// run adds no trial after a result.
func SkillEvalFolder(p *plan.Plan, out, resume string, dryRun bool) (string, error) {
	switch {
	case resume != "" && out != "" && filepath.Clean(out) != filepath.Clean(resume):
		return "", fmt.Errorf("skill-eval: --out %s and --resume %s name two folders: --resume runs in the folder it names", out, resume)
	case resume != "":
		prev, err := plan.ReadPlan(filepath.Join(resume, store.FilePlan))
		if err != nil {
			return "", fmt.Errorf("skill-eval: resume %s: %w", resume, err)
		}
		if prev.Suite.Trials != p.Suite.Trials {
			return "", fmt.Errorf("skill-eval: resume %s: it ran %d trials, this call asks for %d: trials are fixed before the run", resume, prev.Suite.Trials, p.Suite.Trials)
		}
		if prev.Digest != p.Digest {
			return "", fmt.Errorf("skill-eval: resume %s: its tasks, arms, host or model differ from this call's (plan %s, now %s): resume with the same call, or start a fresh run", resume, prev.Digest, p.Digest)
		}
		return resume, nil
	case out == "":
		return "", fmt.Errorf("skill-eval: --out is required (see skillgate skill-eval --help)")
	}
	if _, err := os.Stat(filepath.Join(out, store.FilePlan)); err == nil && !dryRun {
		return "", fmt.Errorf("skill-eval: %s holds a run already: finish it with --resume %s, or choose a fresh --out", out, out)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("skill-eval: %w", err)
	}
	return out, nil
}

// OnlyTasks keeps only the tasks ids of the suite s read from tasksFile, as
// skill-eval's --tasks-only does: the verdict is then theirs. A name that
// is no task of the file is refused, with the tasks it has.
func OnlyTasks(s *suite.Suite, tasksFile string, ids []string) error {
	for _, id := range ids {
		if _, ok := s.Cases[id]; !ok {
			return fmt.Errorf("skill-eval: --tasks-only names %q, which is no task of %s (tasks: %s)", id, tasksFile, strings.Join(s.CaseOrder, ", "))
		}
	}
	s.CaseOrder = slices.DeleteFunc(s.CaseOrder, func(id string) bool { return !slices.Contains(ids, id) })
	for id := range s.Cases {
		if !slices.Contains(ids, id) {
			delete(s.Cases, id)
		}
	}
	return nil
}
