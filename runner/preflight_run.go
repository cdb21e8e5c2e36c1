package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillgate/skillgate/runner/cell"

	"github.com/skillgate/skillgate/runner/checks"

	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/backend"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// preflighter runs preflight jobs in check sessions, as grading runs checks.
type preflighter struct {
	plan   *plan.Plan
	opts   Options
	store  *store.Store
	engine backend.Backend
	images *images.Images
	out    string
	runID  string
}

// errSetupFailed: the case's setup fails; its cells will be invalid saying so, and its
// checks are not tried.
var errSetupFailed = errors.New("the setup fails")

// referencePatch is where a reference patch is put in a preflight session.
const referencePatch = checks.CheckDir + "/reference.patch"

// run runs one job's checks: for each environment its checks name, a check session on the
// case's cell image (fixture and overlay) in that environment, the setup run in it, then
// the reference laid over it when the job is the reference's, then the checks in order.
func (pf *preflighter) run(ctx context.Context, j preflightJob) ([]PreflightCheck, error) {
	lim := pf.plan.Limits
	mem, outputCap, err := checks.CheckSessionLimits(lim)
	if err != nil {
		return nil, err
	}
	world, err := checks.CheckWorld(pf.plan, grade.World{}, nil)
	if err != nil {
		return nil, err
	}
	sessions := map[string]backend.Session{}
	defer func() {
		for _, s := range sessions {
			if s != nil {
				s.Close()
			}
		}
	}()
	var out []PreflightCheck
	for i, a := range j.runs {
		t := a.Timeout
		if t == "" {
			t = lim.Check
		}
		d, err := time.ParseDuration(t)
		if err != nil {
			return nil, fmt.Errorf("read timeout of run check %q: %w", checks.RunName(a), err)
		}
		env := a.Environment
		if env == "" {
			env = j.pc.Environment
		}
		s := sessions[env]
		if s == nil {
			if s, err = pf.start(ctx, j, env, mem, world); errors.Is(err, errSetupFailed) {
				fmt.Fprintf(pf.opts.logger(), "preflight: case %s: %v in %s; its checks are not tried (its cells will be invalid)\n", j.pc.ID, err, environmentName(env))
				return nil, nil
			} else if err != nil {
				return nil, err
			}
			sessions[env] = s
		}
		vars := append(images.EnvironmentEnv(pf.plan, env), "WORLD="+docker.Workspace, "OUTPUT="+checks.CheckAnswer)
		vars = append(vars, checks.CaseDirEnv(j.pc)...)
		res, err := s.Exec(ctx, docker.ExecSpec{Cmd: []string{checks.ShellOf(a.Shell), "-c", *a.Run}, Env: vars, Timeout: d, OutputCap: outputCap})
		if err != nil {
			return nil, fmt.Errorf("run check %q: %w", checks.RunName(a), err)
		}
		ch := PreflightCheck{Key: j.keys[i], Case: j.pc.ID, Check: checks.RunName(a), Environment: env, On: j.on,
			ExitCode: res.ExitCode, TimedOut: res.TimedOut, Passed: !res.TimedOut && res.ExitCode == 0, CannotRun: cannotRun(res)}
		if !ch.Passed {
			ch.Output = cell.LastBytes(strings.TrimSpace(strings.ToValidUTF8(string(res.Output), "\uFFFD")), 500)
		}
		out = append(out, ch)
		if res.TimedOut {
			s.Close()
			sessions[env] = nil
		}
	}
	return out, nil
}

// start starts the check session of job j in environment env: the case's initial
// workspace, with the reference over it for a reference job.
func (pf *preflighter) start(ctx context.Context, j preflightJob, env string, mem int64, world checks.CheckWorldTars) (backend.Session, error) {
	lim := pf.plan.Limits
	image, _, err := pf.images.CellImageIn(ctx, j.pc, j.arm, env)
	if err != nil {
		return nil, err
	}
	trees, err := pf.images.SkillTrees(j.arm)
	if err != nil {
		return nil, err
	}
	spec := docker.SessionSpec{Image: image, User: pf.plan.Agent.User, WorkingDir: docker.Workspace,
		Binds: checks.CaseDirBinds(pf.store, j.pc), Trees: trees,
		Labels: map[string]string{docker.LabelRun: pf.runID, docker.LabelOut: cell.OutLabel(pf.out), docker.LabelCell: "preflight:" + j.pc.ID,
			docker.LabelPlan: pf.plan.Digest.Encoded()[:16], docker.LabelKind: "check"},
		Memory: mem, NanoCPUs: 1e9, PidsLimit: lim.CheckPids}
	s, err := checks.StartCheckSession(ctx, pf.engine, spec, world)
	if errors.Is(err, docker.ErrImageMissing) {
		// Removed since it was found: built again, as a cell would.
		pf.images.Forget(spec.Image)
		if spec.Image, _, err = pf.images.CellImageIn(ctx, j.pc, j.arm, env); err == nil {
			s, err = checks.StartCheckSession(ctx, pf.engine, spec, world)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := pf.setup(ctx, s, j.pc, env); err != nil {
		s.Close()
		return nil, err
	}
	if j.on == PreflightReference {
		if err := pf.reference(ctx, s, j.pc, env); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// setup runs the case's setup in the session, as the cell's setup container would.
func (pf *preflighter) setup(ctx context.Context, s backend.Session, pc plan.PlanCase, env string) error {
	if pc.Setup == nil {
		return nil
	}
	t := pc.Setup.Timeout
	if t == "" {
		t = pf.plan.Limits.Setup
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return fmt.Errorf("read the setup timeout: %w", err)
	}
	vars := append(images.EnvironmentEnv(pf.plan, env), "WORLD="+docker.Workspace)
	vars = append(vars, checks.CaseDirEnv(pc)...)
	res, err := s.Exec(ctx, docker.ExecSpec{Cmd: []string{checks.ShellOf(pc.Setup.Shell), "-c", pc.Setup.Run}, Env: vars, Timeout: d, OutputCap: 4 << 10})
	if err != nil {
		return fmt.Errorf("run setup: %w", err)
	}
	if res.TimedOut || res.ExitCode != 0 {
		return fmt.Errorf("%w: exit %d: %s", errSetupFailed, res.ExitCode, cell.LastBytes(strings.TrimSpace(string(res.Output)), 500))
	}
	return nil
}

// reference lays the case's reference solution over the session's workspace: a folder's
// files replace those at the same paths; a patch file is applied with git apply, or patch
// where the environment has no git.
func (pf *preflighter) reference(ctx context.Context, s backend.Session, pc plan.PlanCase, env string) error {
	uid, gid, err := images.Owner(pf.plan.Agent.User)
	if err != nil {
		return err
	}
	src := filepath.Join(pf.opts.SuiteDir, filepath.FromSlash(pc.Reference))
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("read reference: %w", err)
	}
	bc := docker.NewBuildContext("")
	if fi.IsDir() {
		if err := bc.AddHostTree(strings.TrimPrefix(docker.Workspace, "/"), src, uid, gid); err != nil {
			return fmt.Errorf("read reference %s: %w", pc.Reference, err)
		}
	} else {
		bc.AddHostFileMode(strings.TrimPrefix(referencePatch, "/"), src, 0o444, uid, gid)
	}
	layer, err := bc.Layer()
	if err != nil {
		return fmt.Errorf("read reference %s: %w", pc.Reference, err)
	}
	if err := s.CopyIn(ctx, bytes.NewReader(layer)); err != nil {
		return fmt.Errorf("lay out reference %s: %w", pc.Reference, err)
	}
	if fi.IsDir() {
		return nil
	}
	apply := "cd " + docker.Workspace + " && if command -v git >/dev/null 2>&1; then git apply --unsafe-paths -p1 " + referencePatch +
		"; elif command -v patch >/dev/null 2>&1; then patch -p1 -i " + referencePatch + "; else echo 'neither git nor patch is installed' >&2; exit 127; fi"
	res, err := s.Exec(ctx, docker.ExecSpec{Cmd: []string{"sh", "-c", apply}, OutputCap: 4 << 10})
	if err != nil {
		return fmt.Errorf("apply reference %s: %w", pc.Reference, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%w: apply reference %s in %s: exit %d: %s", ErrPreflight, pc.Reference, environmentName(env), res.ExitCode, cell.LastBytes(strings.TrimSpace(string(res.Output)), 500))
	}
	return nil
}

// environmentName names where a check runs, for people.
func environmentName(env string) string {
	if env == "" {
		return "the agent's image"
	}
	return "environment " + env
}
