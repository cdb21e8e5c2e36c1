package checks

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/store"
)

// CheckDir holds, in a check container, what the checks are given besides the workspace.
const (
	CheckDir    = "/skillgate-check"
	CheckAnswer = CheckDir + "/answer.txt"
	CheckDelete = CheckDir + "/delete"
	// CheckSetupDelete lists what the case's setup deleted.
	CheckSetupDelete = CheckDir + "/setup-delete"
)

// CaseDirMount is where a case's folder is mounted, read-only, for its setup and its
// run: checks ($SKILLGATE_CASE_DIR, $SKILL_EVAL_FIXTURES); never in the agent's cell.
const CaseDirMount = "/skillgate-case"

// legacyCheckOutput is what a check's output was read back up to before
// limits.checkOutput, for plans written then, which have no such limit.
const legacyCheckOutput = 64 << 10

// CheckOutputCap is how much of a check's or a setup's output is read
// back: limits.checkOutput, or legacyCheckOutput for plans without it.
func CheckOutputCap(lim plan.PlanLimits) (int64, error) {
	if lim.CheckOutput == "" {
		return legacyCheckOutput, nil
	}
	n, err := suite.ParseBytes(lim.CheckOutput)
	if err != nil {
		return 0, fmt.Errorf("read limits.checkOutput: %w", err)
	}
	return n, nil
}

// CheckSessionLimits are a check session's memory and its output cap.
func CheckSessionLimits(lim plan.PlanLimits) (mem, outputCap int64, err error) {
	if mem, err = suite.ParseBytes(lim.CheckMemory); err != nil {
		return 0, 0, fmt.Errorf("read limits.checkMemory: %w", err)
	}
	if outputCap, err = CheckOutputCap(lim); err != nil {
		return 0, 0, err
	}
	return mem, outputCap, nil
}

// CaseDirEnv and CaseDirBinds give a setup or a check its case's folder: the store's
// verified snapshot, mounted read-only.
func CaseDirEnv(pc plan.PlanCase) []string {
	if pc.CaseDir == "" {
		return nil
	}
	return []string{"SKILLGATE_CASE_DIR=" + CaseDirMount, "SKILL_EVAL_FIXTURES=" + CaseDirMount}
}

func CaseDirBinds(st *store.Store, pc plan.PlanCase) []string {
	if pc.CaseDir == "" {
		return nil
	}
	return []string{st.TreeDir(pc.CaseDirDigest) + ":" + CaseDirMount + ":ro"}
}

// ShellOf is the shell a setup or check names, sh when none.
func ShellOf(name string) string {
	if name == "" {
		return "sh"
	}
	return name
}

// StartCheckSession starts a check container and lays the final workspace out in it: for
// the setup's changes, then the agent's, the deleted paths removed, then the changed
// entries unpacked over what is there.
func StartCheckSession(ctx context.Context, e backend.Backend, spec backend.SessionSpec, world CheckWorldTars) (backend.Session, error) {
	s, err := e.StartSession(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := s.CopyIn(ctx, bytes.NewReader(world.given)); err != nil {
		s.Close()
		return nil, err
	}
	for _, step := range world.steps {
		if step.deletes != "" {
			res, err := s.Exec(ctx, backend.ExecSpec{Cmd: []string{"sh", "-c", "cd " + backend.Workspace + " && xargs -0 rm -rf -- < " + step.deletes}, OutputCap: 4 << 10})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("remove the deleted paths: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Output)))
			}
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("lay out the final workspace: %w", err)
			}
		}
		if step.changed != nil {
			if err := s.CopyIn(ctx, bytes.NewReader(step.changed)); err != nil {
				s.Close()
				return nil, err
			}
		}
	}
	return s, nil
}

// CheckResult reads one check's outcome.
func CheckResult(a suite.Assertion, res *backend.ExecOutcome, timeout time.Duration) grade.CheckResult {
	ch := grade.CheckResult{Name: RunName(a), Kind: grade.CheckRun, Passed: !res.TimedOut && res.ExitCode == 0}
	if ch.Passed {
		return ch
	}
	detail := strings.TrimSpace(strings.ToValidUTF8(string(res.Output), "\uFFFD"))
	if len(detail) > 500 {
		detail = detail[:500] + "..."
	}
	ch.Detail = fmt.Sprintf("exit %d", res.ExitCode)
	if res.TimedOut {
		ch.Detail = fmt.Sprintf("timed out after %s", timeout)
	}
	if detail != "" {
		ch.Detail += ": " + detail
	}
	return ch
}

func RunName(a suite.Assertion) string {
	if a.Name != "" {
		return a.Name
	}
	s := *a.Run
	if len(s) > 70 {
		s = s[:67] + "..."
	}
	return "run: " + s
}
