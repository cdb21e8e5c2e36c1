package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/skillgate/skillgate/runner/cell"

	"github.com/skillgate/skillgate/runner/checks"

	"github.com/skillgate/skillgate/runner/readback"

	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/backend"

	"github.com/skillgate/skillgate/runner/agent"
	"github.com/skillgate/skillgate/runner/internal/bounded"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"

	"github.com/skillgate/skillgate/runner/redact"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// Grade grades every selected cell whose rollout is stored and whose grade is not (or is
// invalid): typed checks in Go on the stored workspace, run: checks in a network-less
// container holding the cell's final workspace, then routing and cost. Grades are stored
// by grade key, so changing only an assertion regrades stored rollouts without starting an
// agent. A cell that cannot be graded because Docker or skillgate failed is stored as an
// invalid grade with the reason, which the next run retries: grading never stops the
// verdict.
func Grade(ctx context.Context, p *plan.Plan, cells []plan.Cell, opts Options) (graded int, err error) {
	out, st, unlock, err := openRunFolder(opts.Out)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := useCache(st, opts); err != nil {
		return 0, err
	}
	cases, arms := p.CasesByID(), p.ArmsByName()
	var todo []plan.Cell
	seen := map[digest.Digest]bool{}
	for _, c := range cells {
		if seen[c.Grade] {
			continue
		}
		if g, ok, err := st.Grade(c.Grade); err != nil {
			return 0, err
		} else if ok && (g.Status != store.StatusInvalid || g.Judge != nil) {
			// Graded: a grade made invalid by an unreadable judge reply stands too;
			// only a grade that failed (Docker, skillgate) is retried.
			continue
		}
		if ro, ok, err := st.Rollout(c.Rollout); err != nil {
			return 0, err
		} else if ok && ro.Status != store.StatusInvalid {
			seen[c.Grade] = true
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 {
		return 0, nil
	}
	if err := st.PinFixtures(p, opts.SuiteDir, todo); err != nil {
		return 0, err
	}
	if err := pinCheckInputs(p, opts.SuiteDir, st, todo, cases, arms); err != nil {
		return 0, err
	}
	g := &grader{plan: p, store: st, opts: opts, cases: cases, arms: arms, out: out, runID: cell.NewRunID()}
	defer g.close()
	var mu sync.Mutex
	bounded.ForEach(ctx, opts.Jobs, todo, func(c plan.Cell) {
		err := g.grade(ctx, c)
		if ctx.Err() != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			graded++
			return
		}
		fmt.Fprintf(opts.logger(), "grade %s: %v (the cell is invalid until a run grades it)\n", c.ID, err)
		r := grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade,
			Status: store.StatusInvalid, Error: "grade: " + g.redact().String(err.Error()), Checks: []grade.CheckResult{}}
		if perr := st.PutGrade(r); perr != nil {
			fmt.Fprintf(opts.logger(), "store grade %s: %v\n", c.ID, perr)
		}
	})
	if g.engine != nil {
		g.sweep(ctx)
	}
	return graded, ctx.Err()
}

// logger is where progress goes.
func (o Options) logger() io.Writer {
	if o.Log == nil {
		return io.Discard
	}
	return o.Log
}

// grader grades cells, starting a Docker engine only if a case has run:
// assertions.
type grader struct {
	plan  *plan.Plan
	store *store.Store
	opts  Options
	cases map[string]plan.PlanCase
	arms  map[string]plan.PlanArm
	out   string
	runID string

	once   sync.Once
	engine backend.Backend
	images *images.Images
	err    error
	red    *redact.Redactor
	// stopReaper ends the reaper of this grading's check containers.
	stopReaper func()
}

func (g *grader) close() {
	if g.stopReaper != nil {
		g.stopReaper()
	}
	if g.engine != nil {
		g.engine.Close()
	}
}

// redact is the run's redactor of stored text.
func (g *grader) redact() *redact.Redactor {
	if g.red == nil {
		g.red = redact.New(g.plan)
	}
	return g.red
}

// sweep removes every check container of this grading, even once ctx is cancelled.
func (g *grader) sweep(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	g.engine.Sweep(sctx, docker.LabelRun+"="+g.runID)
}

func (g *grader) grade(ctx context.Context, c plan.Cell) error {
	pc := g.cases[c.Case]
	arm := plan.CaseArm(g.plan, pc, g.arms[c.Arm])
	ro, ok, err := g.store.Rollout(c.Rollout)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no stored rollout %s", c.Rollout)
	}
	answer, err := g.store.Answer(ro)
	if err != nil {
		return err
	}
	in := grade.GradeInput{
		Status: ro.Status, Error: ro.Error, Answer: string(answer), Messages: ro.Messages,
		World:        g.store.World(g.plan, g.opts.SuiteDir, pc, arm, ro),
		Telemetry:    ro.Telemetry,
		AgentSeconds: ro.Durations.Agent, TotalSeconds: ro.Durations.Total,
		Collection: ro.Collection.Cut,
	}
	if ro.Gateway != nil {
		in.USD = ro.Gateway.USD
	}
	for _, k := range arm.Skills {
		in.SkillBytes += g.plan.Skills[k].Bytes
	}
	if in.Trajectory, err = rolloutTrajectory(g.plan, g.store, pc, ro); err != nil {
		return err
	}
	if in.RunChecks, err = g.runChecks(ctx, c, pc, arm, ro, in.World, answer); err != nil {
		return err
	}
	r, err := grade.GradeCell(g.plan, pc, c, in)
	if err != nil {
		return err
	}
	return g.store.PutGrade(r)
}

// rolloutTrajectory reads a rollout's calls from its stored transcript, for the
// trajectory checks: what the agent's CLI wrote, kept by the runner, never a file the
// agent left in its workspace. A case with no trajectory check reads nothing.
func rolloutTrajectory(p *plan.Plan, st *store.Store, pc plan.PlanCase, ro *store.Rollout) (grade.Trajectory, error) {
	need := false
	for _, a := range pc.Assert {
		need = need || a.Commands != nil || a.Tool != nil || a.Sequence != nil
	}
	if !need {
		return grade.Trajectory{}, nil
	}
	dir := st.RolloutDir(ro.Key)
	stdout, err := readback.ReadOptional(filepath.Join(dir, store.FileStdout))
	if err != nil {
		return grade.Trajectory{}, err
	}
	stderr, err := readback.ReadOptional(filepath.Join(dir, store.FileStderr))
	if err != nil {
		return grade.Trajectory{}, err
	}
	return agent.Calls(p.Agent.Kind, stdout, stderr, pc.Replies), nil
}

// checkSession is the session of one environment's run: checks.
type checkSession struct {
	spec docker.SessionSpec
	s    backend.Session
}

// runChecks runs the case's run: assertions in containers holding the cell's final
// workspace: the cell image of its environment (or of the one a check names) with the
// setup's and the agent's stored changes applied, $WORLD the workspace and the working
// folder, $OUTPUT the answer as the agent gave it, the case folder mounted read-only, the
// environment's variables. Each check is its own process, whose exit code the engine
// reports, so no output can forge a result; a check past its timeout ends its container,
// and the checks after it start in a fresh one. What a check writes stays in its
// container: the stored rollout is only read.
func (g *grader) runChecks(ctx context.Context, c plan.Cell, pc plan.PlanCase, arm plan.PlanArm, ro *store.Rollout, w grade.World, answer []byte) ([]grade.CheckResult, error) {
	var runs []suite.Assertion
	for _, a := range pc.Assert {
		if a.Run != nil {
			runs = append(runs, a)
		}
	}
	out := make([]grade.CheckResult, len(runs))
	if len(runs) == 0 || ro.Status != store.StatusCompleted {
		// An agent that did not complete fails anyway; its checks are not run.
		for i, a := range runs {
			out[i] = grade.CheckResult{Name: checks.RunName(a), Kind: grade.CheckRun, Detail: "not run: the agent did not complete"}
		}
		return out, nil
	}
	g.once.Do(func() {
		if g.engine, g.err = newBackend(ctx, g.opts); g.err != nil {
			return
		}
		if _, local := g.engine.(dockerBackend); local {
			// Check containers outlive a kill -9 of this process: a reaper
			// removes them then.
			if g.stopReaper, g.err = startReaper(docker.LabelRun + "=" + g.runID); g.err != nil {
				return
			}
		}
		// The folder is locked: a container labelled for it is a dead run's.
		if n, err := g.engine.Sweep(ctx, docker.LabelOut+"="+cell.OutLabel(g.out)); err == nil && n > 0 {
			fmt.Fprintf(g.opts.logger(), "removed %d containers left by an interrupted run\n", n)
		}
		g.images = images.New(g.engine, g.plan, g.store, g.opts.logger())
	})
	if g.err != nil {
		return nil, g.err
	}
	world, err := checks.CheckWorld(g.plan, w, answer)
	if err != nil {
		return nil, err
	}
	lim := g.plan.Limits
	mem, outputCap, err := checks.CheckSessionLimits(lim)
	if err != nil {
		return nil, err
	}
	sessions := map[string]*checkSession{}
	defer func() {
		for _, cs := range sessions {
			if cs.s != nil {
				cs.s.Close()
			}
		}
	}()
	for i, a := range runs {
		t := a.Timeout
		if t == "" {
			t = lim.Check
		}
		d, err := time.ParseDuration(t)
		if err != nil {
			return nil, fmt.Errorf("read timeout of run assertion %d of %s: %w", i, pc.ID, err)
		}
		env := a.Environment
		if env == "" {
			env = pc.Environment
		}
		cs := sessions[env]
		if cs == nil {
			image, _, err := g.images.CellImageIn(ctx, pc, arm, env)
			if err != nil {
				return nil, err
			}
			trees, err := g.images.SkillTrees(arm)
			if err != nil {
				return nil, err
			}
			cs = &checkSession{spec: docker.SessionSpec{Image: image, User: g.plan.Agent.User, WorkingDir: docker.Workspace,
				Binds: checks.CaseDirBinds(g.store, pc), Trees: trees,
				Labels: map[string]string{docker.LabelRun: g.runID, docker.LabelOut: cell.OutLabel(g.out), docker.LabelCell: c.ID, docker.LabelPlan: g.plan.Digest.Encoded()[:16], docker.LabelKind: "check"},
				Memory: mem, NanoCPUs: 1e9, PidsLimit: lim.CheckPids}}
			sessions[env] = cs
		}
		if cs.s == nil {
			cs.s, err = checks.StartCheckSession(ctx, g.engine, cs.spec, world)
			if errors.Is(err, docker.ErrImageMissing) {
				// Removed since it was found: built again, as a cell would.
				g.images.Forget(cs.spec.Image)
				if cs.spec.Image, _, err = g.images.CellImageIn(ctx, pc, arm, env); err == nil {
					cs.s, err = checks.StartCheckSession(ctx, g.engine, cs.spec, world)
				}
			}
			if err != nil {
				return nil, err
			}
		}
		vars := append(images.EnvironmentEnv(g.plan, env), "WORLD="+docker.Workspace, "OUTPUT="+checks.CheckAnswer)
		vars = append(vars, checks.CaseDirEnv(pc)...)
		res, err := cs.s.Exec(ctx, docker.ExecSpec{Cmd: []string{checks.ShellOf(a.Shell), "-c", *a.Run}, Env: vars, Timeout: d, OutputCap: outputCap})
		if err != nil {
			return nil, fmt.Errorf("run check %d of %s: %w", i, c.ID, err)
		}
		if why := cannotRun(res); why != "" {
			// Not the agent's doing: the cell is invalid, never failed.
			return nil, fmt.Errorf("check %q cannot run in %s: %s", checks.RunName(a), environmentName(env), why)
		}
		out[i] = checks.CheckResult(a, res, d)
		if res.TimedOut {
			cs.s.Close()
			cs.s = nil
		}
	}
	return out, nil
}
