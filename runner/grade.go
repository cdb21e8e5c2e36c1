package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
	cases := map[string]plan.PlanCase{}
	for _, c := range p.Cases {
		cases[c.ID] = c
	}
	arms := map[string]plan.PlanArm{}
	for _, a := range p.Arms {
		arms[a.Name] = a
	}
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
	g := &grader{plan: p, store: st, opts: opts, cases: cases, arms: arms, out: out, runID: newRunID()}
	defer g.close()
	var mu sync.Mutex
	forEach(ctx, opts.Jobs, todo, func(c plan.Cell) {
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
	engine backend
	images *images
	err    error
	red    *redact.Redactor
}

func (g *grader) close() {
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
	if in.RunChecks, err = g.runChecks(ctx, c, pc, arm, ro, in.World, answer); err != nil {
		return err
	}
	r, err := grade.GradeCell(g.plan, pc, c, in)
	if err != nil {
		return err
	}
	return g.store.PutGrade(r)
}

// checkDir holds, in a check container, what the checks are given besides the workspace.
const (
	checkDir    = "/skillgate-check"
	checkAnswer = checkDir + "/answer.txt"
	checkDelete = checkDir + "/delete"
)

// checkOutputCap is how much of a check's output is read back; its detail keeps less.
const checkOutputCap = 64 << 10

// runChecks runs the case's run: assertions in a container holding the cell's final
// workspace: the cell image (the agent's image, the fixture, the arm's skills) with the
// stored changes applied, $WORLD the workspace and the working folder, $OUTPUT the answer
// as the agent gave it. Each check is its own process, whose exit code the engine reports,
// so no output can forge a result; a check past its timeout ends the container, and the
// checks after it start in a fresh one.
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
			out[i] = grade.CheckResult{Name: runName(a), Kind: grade.CheckRun, Detail: "not run: the agent did not complete"}
		}
		return out, nil
	}
	g.once.Do(func() {
		if g.engine, g.err = newBackend(ctx); g.err != nil {
			return
		}
		// The folder is locked: a container labelled for it is a dead run's.
		if n, err := g.engine.Sweep(ctx, docker.LabelOut+"="+outLabel(g.out)); err == nil && n > 0 {
			fmt.Fprintf(g.opts.logger(), "removed %d containers left by an interrupted run\n", n)
		}
		g.images = newImages(g.engine, g.plan, g.store, g.opts.logger())
	})
	if g.err != nil {
		return nil, g.err
	}
	image, _, err := g.images.cellImage(ctx, pc, arm)
	if err != nil {
		return nil, err
	}
	world, err := checkWorld(g.plan, w, answer)
	if err != nil {
		return nil, err
	}
	lim := g.plan.Limits
	mem, err := suite.ParseBytes(lim.CheckMemory)
	if err != nil {
		return nil, fmt.Errorf("read limits.checkMemory: %w", err)
	}
	spec := docker.SessionSpec{Image: image, User: g.plan.Agent.User, WorkingDir: docker.Workspace,
		Labels: map[string]string{docker.LabelRun: g.runID, docker.LabelOut: outLabel(g.out), docker.LabelCell: c.ID, docker.LabelPlan: g.plan.Digest.Encoded()[:16], docker.LabelKind: "check"},
		Memory: mem, NanoCPUs: 1e9, PidsLimit: lim.CheckPids}
	var s *docker.Session
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	env := []string{"WORLD=" + docker.Workspace, "OUTPUT=" + checkAnswer}
	for i, a := range runs {
		t := a.Timeout
		if t == "" {
			t = lim.Check
		}
		d, err := time.ParseDuration(t)
		if err != nil {
			return nil, fmt.Errorf("read timeout of run assertion %d of %s: %w", i, pc.ID, err)
		}
		if s == nil {
			s, err = startCheckSession(ctx, g.engine, spec, world)
			if errors.Is(err, docker.ErrImageMissing) {
				// Removed since it was found: built again, as a cell would.
				g.images.forget(spec.Image)
				if spec.Image, _, err = g.images.cellImage(ctx, pc, arm); err == nil {
					s, err = startCheckSession(ctx, g.engine, spec, world)
				}
			}
			if err != nil {
				return nil, err
			}
		}
		res, err := s.Exec(ctx, docker.ExecSpec{Cmd: []string{"sh", "-c", *a.Run}, Env: env, Timeout: d, OutputCap: checkOutputCap})
		if err != nil {
			return nil, fmt.Errorf("run check %d of %s: %w", i, c.ID, err)
		}
		out[i] = checkResult(a, res, d)
		if res.TimedOut {
			s.Close()
			s = nil
		}
	}
	return out, nil
}

// startCheckSession starts a check container and lays the final workspace out in it: the
// deleted paths removed, then the changed entries unpacked over the image's.
func startCheckSession(ctx context.Context, e backend, spec docker.SessionSpec, world checkWorldTars) (*docker.Session, error) {
	s, err := e.StartSession(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := s.CopyIn(ctx, bytes.NewReader(world.given)); err != nil {
		s.Close()
		return nil, err
	}
	if world.deletes {
		res, err := s.Exec(ctx, docker.ExecSpec{Cmd: []string{"sh", "-c", "cd " + docker.Workspace + " && xargs -0 rm -rf -- < " + checkDelete}, OutputCap: 4 << 10})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("remove the deleted paths: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Output)))
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("lay out the final workspace: %w", err)
		}
	}
	if world.changed != nil {
		if err := s.CopyIn(ctx, bytes.NewReader(world.changed)); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// checkResult reads one check's outcome.
func checkResult(a suite.Assertion, res *docker.ExecOutcome, timeout time.Duration) grade.CheckResult {
	ch := grade.CheckResult{Name: runName(a), Kind: grade.CheckRun, Passed: !res.TimedOut && res.ExitCode == 0}
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

func runName(a suite.Assertion) string {
	if a.Name != "" {
		return a.Name
	}
	s := *a.Run
	if len(s) > 70 {
		s = s[:67] + "..."
	}
	return "run: " + s
}

// checkWorldTars are the archives that turn a cell image into the cell's final state.
type checkWorldTars struct {
	// given holds the answer and the list of deleted paths, root-owned.
	given []byte
	// deletes says the list is not empty.
	deletes bool
	// changed holds the final entries that differ from the image, owned by the agent's
	// user; nil when there are none.
	changed []byte
}

// checkWorld builds the archives of a cell's final state from its stored changes.
func checkWorld(p *plan.Plan, w grade.World, answer []byte) (checkWorldTars, error) {
	uid, gid, err := owner(p.Agent.User)
	if err != nil {
		return checkWorldTars{}, err
	}
	var out checkWorldTars
	var del bytes.Buffer
	for _, ch := range w.Changes {
		if ch.Kind == grade.ChangeDeleted {
			del.WriteString(ch.Path)
			del.WriteByte(0)
		}
	}
	out.deletes = del.Len() > 0
	given := docker.NewBuildContext("")
	given.AddDir(strings.TrimPrefix(checkDir, "/"), 0o555, 0, 0)
	given.AddFile(strings.TrimPrefix(checkAnswer, "/"), 0o444, 0, 0, answer)
	given.AddFile(strings.TrimPrefix(checkDelete, "/"), 0o444, 0, 0, del.Bytes())
	if out.given, err = given.Layer(); err != nil {
		return out, fmt.Errorf("lay out the final workspace: %w", err)
	}
	changed := docker.NewBuildContext("")
	n := 0
	for _, ch := range w.Changes {
		if ch.Kind == grade.ChangeDeleted || ch.Cut != "" {
			continue
		}
		rel := path.Join(strings.TrimPrefix(docker.Workspace, "/"), ch.Path)
		for d := path.Dir(ch.Path); d != "."; d = path.Dir(d) {
			changed.AddDir(path.Join(strings.TrimPrefix(docker.Workspace, "/"), d), 0o755, uid, gid)
		}
		switch ch.Type {
		case grade.TypeDir:
			changed.AddDir(rel, 0o755, uid, gid)
		case grade.TypeSymlink:
			changed.AddSymlink(rel, ch.Target, uid, gid)
		case grade.TypeOther:
			continue // a FIFO or device: not reproduced
		default:
			mode := int64(0o644)
			if ch.Exec {
				mode = 0o755
			}
			blob := filepath.Join(w.Changed, ch.Digest.Encoded())
			if ch.Digest == "" {
				blob = filepath.Join(w.Changed, filepath.FromSlash(ch.Path))
			}
			changed.AddHostFileMode(rel, blob, mode, uid, gid)
		}
		n++
	}
	if n > 0 {
		if out.changed, err = changed.Layer(); err != nil {
			return out, fmt.Errorf("lay out the final workspace: %w", err)
		}
	}
	return out, nil
}

// outLabel is the label value that names a run folder on what skillgate starts for it.
func outLabel(out string) string {
	return digest.FromString(out).Encoded()[:16]
}

// forEach calls fn on items with at most jobs at once, and stops handing
// out items once ctx is done.
func forEach[T any](ctx context.Context, jobs int, items []T, fn func(T)) {
	if jobs < 1 {
		jobs = 1
	}
	work := make(chan T)
	var wg sync.WaitGroup
	for j := 0; j < jobs; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				fn(it)
			}
		}()
	}
feed:
	for _, it := range items {
		select {
		case work <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
}
