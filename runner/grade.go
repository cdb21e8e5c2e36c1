package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline"
)

const storeGrades = "store/grades"

// GradePath is where the grade stored under key lives.
func (s *Store) GradePath(key digest.Digest) string {
	return filepath.Join(s.Dir, storeGrades, key.Encoded()+".json")
}

// Grade reads the cell result stored under a grade key.
func (s *Store) Grade(key digest.Digest) (*pipeline.CellResult, bool, error) {
	b, err := os.ReadFile(s.GradePath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read grade %s: %w", key, err)
	}
	var r pipeline.CellResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, false, fmt.Errorf("read grade %s: %w", key, err)
	}
	return &r, true, nil
}

// putGrade stores a cell result under its grade key, atomically.
func (s *Store) putGrade(r pipeline.CellResult) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err == nil {
		err = s.putFile(s.GradePath(r.Grade), append(b, '\n'))
	}
	if err != nil {
		return fmt.Errorf("store grade %s: %w", r.Cell, err)
	}
	return nil
}

// Results returns one CellResult per plan cell from the store alone: a
// stored grade, else an invalid rollout, else missing. It needs no Docker
// and no model.
func Results(p *pipeline.Plan, store *Store) ([]pipeline.CellResult, error) {
	out := make([]pipeline.CellResult, len(p.Cells))
	for i, c := range p.Cells {
		r, err := storedResult(store, c)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func storedResult(store *Store, c pipeline.Cell) (pipeline.CellResult, error) {
	base := pipeline.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade, Status: pipeline.StatusMissing, Checks: []pipeline.CheckResult{}}
	if g, ok, err := store.Grade(c.Grade); err != nil || ok {
		if ok {
			// A grade is shared by cells with equal keys: name this one.
			g.Cell, g.Case, g.Arm, g.Trial = c.ID, c.Case, c.Arm, c.Trial
			return *g, nil
		}
		return base, err
	}
	ro, ok, err := store.Rollout(c.Rollout)
	if err != nil || !ok {
		return base, err
	}
	if ro.Status == StatusInvalid {
		base.Status, base.Error = ro.Status, ro.Error
	}
	return base, nil
}

// Grade grades every selected cell whose rollout is stored and whose grade
// is not: typed checks in Go on the stored workspace, run: checks in a
// fresh network-less container, then routing and cost. Grades are stored
// by grade key, so changing only an assertion regrades stored rollouts
// without starting an agent.
func Grade(ctx context.Context, p *pipeline.Plan, cells []pipeline.Cell, opts Options) (graded int, err error) {
	store, err := OpenStore(opts.Out)
	if err != nil {
		return 0, err
	}
	cases := map[string]pipeline.PlanCase{}
	for _, c := range p.Cases {
		cases[c.ID] = c
	}
	arms := map[string]pipeline.PlanArm{}
	for _, a := range p.Arms {
		arms[a.Name] = a
	}
	var todo []pipeline.Cell
	for _, c := range cells {
		if _, ok, err := store.Grade(c.Grade); err != nil {
			return 0, err
		} else if ok {
			continue
		}
		if ro, ok, err := store.Rollout(c.Rollout); err != nil {
			return 0, err
		} else if ok && ro.Status != StatusInvalid {
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 {
		return 0, nil
	}
	if err := pinFixtures(p, opts.SuiteDir, store, todo); err != nil {
		return 0, err
	}
	g := &grader{plan: p, store: store, opts: opts, cases: cases, arms: arms}
	defer g.close()
	var mu sync.Mutex
	var first error
	forEach(ctx, opts.Jobs, todo, func(c pipeline.Cell) {
		err := g.grade(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			graded++
		} else if first == nil && ctx.Err() == nil {
			first = err
		}
	})
	if first == nil {
		first = ctx.Err()
	}
	return graded, first
}

// grader grades cells, starting a Docker engine only if a case has run:
// assertions.
type grader struct {
	plan  *pipeline.Plan
	store *Store
	opts  Options
	cases map[string]pipeline.PlanCase
	arms  map[string]pipeline.PlanArm

	once    sync.Once
	engine  *Engine
	sandbox string
	err     error
}

func (g *grader) close() {
	if g.engine != nil {
		g.engine.Close()
	}
}

func (g *grader) grade(ctx context.Context, c pipeline.Cell) error {
	pc, arm := g.cases[c.Case], g.arms[c.Arm]
	ro, _, err := g.store.Rollout(c.Rollout)
	if err != nil {
		return err
	}
	in := pipeline.GradeInput{
		Status: ro.Status, Error: ro.Error, Answer: ro.Answer,
		World:        g.world(pc, ro),
		Telemetry:    ro.Telemetry,
		AgentSeconds: ro.Durations.Agent, TotalSeconds: ro.Durations.Total,
	}
	if ro.Gateway != nil {
		in.USD = ro.Gateway.USD
	}
	for _, k := range arm.Skills {
		in.SkillBytes += g.plan.Skills[k].Bytes
	}
	if in.RunChecks, err = g.runChecks(ctx, c, pc, ro, in.World); err != nil {
		return err
	}
	r, err := pipeline.GradeCell(g.plan, pc, c, in)
	if err != nil {
		return err
	}
	return g.store.putGrade(r)
}

func (g *grader) world(pc pipeline.PlanCase, ro *Rollout) pipeline.World {
	w := pipeline.World{Changed: filepath.Join(g.store.RolloutDir(ro.Key), DirWorkspace)}
	if pc.Fixture != "" {
		w.Fixture = g.store.TreeDir(pc.FixtureDigest) // the verified snapshot, not the live folder
	}
	for _, ch := range ro.Changes {
		w.Changes = append(w.Changes, pipeline.FileChange{Path: ch.Path, Kind: ch.Kind})
	}
	return w
}

// checkDriver runs each check in its own shell and marks its exit status,
// so one container grades all of a cell's run: assertions.
const checkDriver = `i=0
while [ "$i" -lt "$SKILLGATE_CHECKS" ]; do
	eval "c=\$SKILLGATE_CHECK_$i"
	eval "t=\$SKILLGATE_TIMEOUT_$i"
	echo "::skillgate-check $i"
	timeout "$t" sh -c "$c" 2>&1
	echo "::skillgate-exit $i $?"
	i=$((i+1))
done
`

// runChecks runs the case's run: assertions against the cell's final
// workspace, mounted read-only at $WORLD, with its answer at $OUTPUT, in a
// fresh network-less sandbox container.
func (g *grader) runChecks(ctx context.Context, c pipeline.Cell, pc pipeline.PlanCase, ro *Rollout, w pipeline.World) ([]pipeline.CheckResult, error) {
	var runs []pipeline.Assertion
	for _, a := range pc.Assert {
		if a.Run != nil {
			runs = append(runs, a)
		}
	}
	if len(runs) == 0 || ro.Status != StatusCompleted {
		// An agent that did not complete fails anyway; its checks are not run.
		out := make([]pipeline.CheckResult, len(runs))
		for i, a := range runs {
			out[i] = pipeline.CheckResult{Name: runName(a), Kind: pipeline.CheckRun, Detail: "not run: the agent did not complete"}
		}
		return out, nil
	}
	g.once.Do(func() {
		if g.engine, g.err = NewEngine(ctx); g.err == nil {
			g.sandbox, g.err = g.engine.EnsureSandbox(ctx)
		}
	})
	if g.err != nil {
		return nil, g.err
	}
	tmp, err := os.MkdirTemp(filepath.Join(g.store.Dir, storeTmp), "world-")
	if err != nil {
		return nil, fmt.Errorf("grade cell %s: %w", c.ID, err)
	}
	defer os.RemoveAll(tmp)
	world, output := filepath.Join(tmp, "world"), filepath.Join(tmp, "output")
	if err := materialize(w, world); err != nil {
		return nil, fmt.Errorf("grade cell %s: %w", c.ID, err)
	}
	if err := os.MkdirAll(output, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(output, "answer.txt"), []byte(ro.Answer), 0o644); err != nil {
		return nil, err
	}
	env := []string{"WORLD=/world", "OUTPUT=/output/answer.txt", "SKILLGATE_CHECKS=" + strconv.Itoa(len(runs)), "HOME=/tmp", "PATH=/bin:/usr/bin"}
	var total time.Duration
	for i, a := range runs {
		t := a.Timeout
		if t == "" {
			t = g.plan.Limits.Check
		}
		d, err := time.ParseDuration(t)
		if err != nil {
			return nil, fmt.Errorf("read timeout of run assertion %d of %s: %w", i, pc.ID, err)
		}
		total += d
		env = append(env, fmt.Sprintf("SKILLGATE_CHECK_%d=%s", i, *a.Run), fmt.Sprintf("SKILLGATE_TIMEOUT_%d=%d", i, int(d.Seconds()+0.999)))
	}
	oc, err := g.engine.RunContainer(ctx, ContainerSpec{
		Image: g.sandbox, Cmd: []string{"sh", "-c", checkDriver}, Env: env, User: "1000:1000", WorkingDir: "/tmp",
		Labels: map[string]string{LabelRun: "grade", LabelCell: c.ID, LabelPlan: g.plan.Digest.Encoded()[:16]},
		Memory: 512 << 20, NanoCPUs: 1e9, PidsLimit: 256, Timeout: total + 10*time.Second, OutputCap: 1 << 20,
		Binds: []string{world + ":/world:ro", output + ":/output:ro"},
	})
	if err != nil {
		return nil, fmt.Errorf("run checks of %s: %w", c.ID, err)
	}
	return parseChecks(runs, string(oc.Stdout), oc.TimedOut), nil
}

func runName(a pipeline.Assertion) string {
	if a.Name != "" {
		return a.Name
	}
	s := *a.Run
	if len(s) > 70 {
		s = s[:67] + "..."
	}
	return "run: " + s
}

// parseChecks reads the driver's markers: each check's output and status.
func parseChecks(runs []pipeline.Assertion, out string, timedOut bool) []pipeline.CheckResult {
	res := make([]pipeline.CheckResult, len(runs))
	for i, a := range runs {
		res[i] = pipeline.CheckResult{Name: runName(a), Kind: pipeline.CheckRun, Detail: "no result"}
		if timedOut {
			res[i].Detail = "the checks timed out"
		}
	}
	cur := -1
	var buf strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "::skillgate-check "); ok {
			cur, _ = strconv.Atoi(rest)
			buf.Reset()
			continue
		}
		if rest, ok := strings.CutPrefix(line, "::skillgate-exit "); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				i, _ := strconv.Atoi(f[0])
				code, _ := strconv.Atoi(f[1])
				if i >= 0 && i < len(res) {
					res[i].Passed = code == 0
					res[i].Detail = ""
					if code != 0 {
						detail := strings.TrimSpace(buf.String())
						if len(detail) > 500 {
							detail = detail[:500] + "..."
						}
						res[i].Detail = fmt.Sprintf("exit %d", code)
						if code == 143 || code == 124 {
							res[i].Detail = "timed out"
						}
						if detail != "" {
							res[i].Detail += ": " + detail
						}
					}
				}
			}
			cur = -1
			continue
		}
		if cur >= 0 {
			buf.WriteString(line + "\n")
		}
	}
	return res
}

// materialize lays the final workspace out in dir: the fixture hard-linked
// (copied across file systems), then the changed files, minus the deleted.
func materialize(w pipeline.World, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if w.Fixture != "" {
		if err := linkTree(w.Fixture, dir); err != nil {
			return fmt.Errorf("lay out workspace: %w", err)
		}
	}
	for _, ch := range w.Changes {
		dst := filepath.Join(dir, filepath.FromSlash(ch.Path))
		if ch.Kind == "deleted" {
			os.RemoveAll(dst)
			continue
		}
		src := filepath.Join(w.Changed, filepath.FromSlash(ch.Path))
		if st, err := os.Lstat(src); err != nil || !st.Mode().IsRegular() {
			continue // symlinks and folders are listed, not stored
		}
		os.Remove(dst) // never write through a hard link into the fixture
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := copyFile(src, dst); err != nil {
			return fmt.Errorf("lay out workspace: %w", err)
		}
	}
	return nil
}

func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			if err := os.Link(p, target); err == nil {
				return nil
			}
			return copyFile(p, target)
		}
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm()|0o444)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
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
