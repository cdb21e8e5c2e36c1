package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skillgate/skillgate/runner/cell"

	"github.com/skillgate/skillgate/runner/readback"

	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/internal/bounded"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// Before the first paid cell, every distinct run: check of the selected cases runs once on
// its case's initial workspace (the fixture, the overlay, the setup's changes), in the
// environment it names, and once more on the case's reference solution when it has one. A
// check that cannot run there (exit 126 or 127: a missing tool or interpreter) would fail
// every arm alike, and a check failing on the reference would fail a right answer: either
// stops the run before any cell. A task case whose run: checks all pass on the untouched
// workspace is reported: they cannot tell work from no work. Outcomes are stored by the
// digest of all that decides them, so a rerun does not run them again.

// preflightVersion enters every preflight key; changing what the preflight does reruns it.
const preflightVersion = "preflight-v1"

// ErrPreflight: a check cannot run on a case's initial workspace, or fails on its
// reference solution; no cell was started.
var ErrPreflight = errors.New("preflight")

// Where a preflight check ran.
const (
	PreflightUntouched = "untouched"
	PreflightReference = "reference"
)

// preflightJob is one case's checks on one workspace: its untouched one or its reference.
type preflightJob struct {
	pc  plan.PlanCase
	arm plan.PlanArm
	on  string
	// runs are the case's distinct run: checks, keys their preflight keys.
	runs []suite.Assertion
	keys []digest.Digest
}

// Preflight runs the run: checks of the selected cells' cases on their initial workspaces
// and references (see above), and records the outcomes in the run folder. The error wraps
// ErrPreflight when a check cannot run or fails on a reference: the run must stop before
// any cell. With opts.DryRun nothing starts.
func Preflight(ctx context.Context, p *plan.Plan, opts Options) (*PreflightRecord, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	cells, err := selectCells(p, opts)
	if err != nil || opts.DryRun || opts.SuiteDir == "" {
		return nil, err
	}
	jobs, err := preflightJobs(p, opts.SuiteDir, cells)
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	out, st, unlock, err := openRunFolder(opts.Out)
	if err != nil {
		return nil, err
	}
	defer unlock()
	stored := map[digest.Digest]PreflightCheck{}
	old, _ := readback.ReadPreflight(out)
	if old != nil {
		for _, ch := range old.Checks {
			stored[ch.Key] = ch
		}
	}
	rec := &PreflightRecord{Plan: p.Digest, Checks: []PreflightCheck{}, Warnings: []string{}}
	var todo []preflightJob
	for _, j := range jobs {
		if slices.ContainsFunc(j.keys, func(k digest.Digest) bool { _, ok := stored[k]; return !ok }) {
			todo = append(todo, j)
		} else {
			rec.Reused += len(j.keys)
		}
	}
	fmt.Fprintf(opts.Log, "preflight: %d checks on the cases' untouched workspaces and references, %d stored\n", rec.Reused+countKeys(todo), rec.Reused)
	if len(todo) > 0 {
		ran, err := runPreflight(ctx, p, opts, out, st, todo)
		if err != nil {
			return nil, err
		}
		for _, ch := range ran {
			stored[ch.Key] = ch
			rec.Ran++
		}
	}
	var stops []string
	for _, j := range jobs {
		passed := 0
		tried := 0
		for _, k := range j.keys {
			ch, ok := stored[k]
			if !ok {
				continue // its setup fails
			}
			tried++
			rec.Checks = append(rec.Checks, ch)
			where := fmt.Sprintf("case %s (%s)", ch.Case, environmentName(ch.Environment))
			switch {
			case ch.CannotRun != "":
				stops = append(stops, fmt.Sprintf("check %q cannot run on the %s workspace of %s: %s", ch.Check, ch.On, where, ch.CannotRun))
			case j.on == PreflightReference && !ch.Passed:
				stops = append(stops, fmt.Sprintf("check %q fails on the reference solution of %s: %s", ch.Check, where, preflightDetail(ch)))
			case ch.Passed:
				passed++
			}
		}
		if j.on == PreflightUntouched && j.pc.Kind == "task" && tried == len(j.keys) && passed == tried {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("UNDISCRIMINATING %s: its %d run: checks all pass on the untouched workspace: they cannot tell work from no work", j.pc.ID, passed))
		}
	}
	// Outcomes of other plans' cases stay stored for their reruns; a stop is never kept, so
	// a fixed environment is tried again.
	keep := rec.Checks
	if old != nil {
		for _, ch := range old.Checks {
			if !slices.ContainsFunc(keep, func(o PreflightCheck) bool { return o.Key == ch.Key }) {
				keep = append(keep, ch)
			}
		}
	}
	keep = slices.DeleteFunc(slices.Clone(keep), func(ch PreflightCheck) bool {
		return ch.CannotRun != "" || ch.On == PreflightReference && !ch.Passed
	})
	if err := readback.WritePreflight(out, &PreflightRecord{Plan: p.Digest, Checks: keep, Warnings: rec.Warnings, Ran: rec.Ran, Reused: rec.Reused}); err != nil {
		return nil, err
	}
	for _, w := range rec.Warnings {
		fmt.Fprintf(opts.Log, "warning: %s\n", w)
	}
	if len(stops) > 0 {
		return rec, fmt.Errorf("%w: %s (no cell was started)", ErrPreflight, strings.Join(stops, "; "))
	}
	return rec, nil
}

func countKeys(jobs []preflightJob) int {
	n := 0
	for _, j := range jobs {
		n += len(j.keys)
	}
	return n
}

func preflightDetail(ch PreflightCheck) string {
	d := fmt.Sprintf("exit %d", ch.ExitCode)
	if ch.TimedOut {
		d = "timed out"
	}
	if ch.Output != "" {
		d += ": " + ch.Output
	}
	return d
}

// preflightJobs are the jobs of the selected cells' cases that have run: checks, in plan
// order: each case's untouched workspace, then its reference.
func preflightJobs(p *plan.Plan, suiteDir string, cells []plan.Cell) ([]preflightJob, error) {
	selected := map[string]bool{}
	for _, c := range cells {
		selected[c.Case] = true
	}
	var out []preflightJob
	for _, pc := range p.Cases {
		if !selected[pc.ID] {
			continue
		}
		var runs []suite.Assertion
		for _, a := range pc.Assert {
			if a.Run != nil && !slices.ContainsFunc(runs, func(o suite.Assertion) bool { return sameCheck(o, a) }) {
				runs = append(runs, a)
			}
		}
		if len(runs) == 0 {
			continue
		}
		arm := preflightArm(p, pc)
		ons := []string{PreflightUntouched}
		var ref digest.Digest
		if pc.Reference != "" {
			var err error
			if ref, err = referenceDigest(suiteDir, pc.Reference); err != nil {
				return nil, fmt.Errorf("preflight case %s: %w", pc.ID, err)
			}
			ons = append(ons, PreflightReference)
		}
		for _, on := range ons {
			j := preflightJob{pc: pc, arm: arm, on: on, runs: runs}
			for _, a := range runs {
				j.keys = append(j.keys, preflightKey(p, pc, a, on, ref))
			}
			out = append(out, j)
		}
	}
	return out, nil
}

// sameCheck says two run: checks run the same command the same way.
func sameCheck(a, b suite.Assertion) bool {
	return *a.Run == *b.Run && a.Shell == b.Shell && a.Environment == b.Environment && a.Timeout == b.Timeout
}

// preflightArm is the arm whose cell image a case's checks run on: the first without
// skills, so the workspace is as the case gives it, else the first.
func preflightArm(p *plan.Plan, pc plan.PlanCase) plan.PlanArm {
	for _, a := range p.Arms {
		if arm := plan.CaseArm(p, pc, a); len(arm.Skills) == 0 {
			return arm
		}
	}
	return plan.CaseArm(p, pc, p.Arms[0])
}

// preflightKey digests all that decides a check's preflight outcome: the agent's image and
// user, the case's workspace, setup, folder and environments, the check, and the reference.
func preflightKey(p *plan.Plan, pc plan.PlanCase, a suite.Assertion, on string, ref digest.Digest) digest.Digest {
	env := a.Environment
	if env == "" {
		env = pc.Environment
	}
	timeout := a.Timeout
	if timeout == "" {
		timeout = p.Limits.Check
	}
	b, _ := json.Marshal(struct {
		Version     string           `json:"version"`
		Image       string           `json:"image"`
		User        string           `json:"user"`
		Workspace   digest.Digest    `json:"workspace"`
		Setup       *suite.Setup     `json:"setup,omitempty"`
		CaseDir     digest.Digest    `json:"caseDir,omitempty"`
		Environment [2]digest.Digest `json:"environment"`
		Run         string           `json:"run"`
		Shell       string           `json:"shell,omitempty"`
		Timeout     string           `json:"timeout,omitempty"`
		On          string           `json:"on"`
		Reference   digest.Digest    `json:"reference,omitempty"`
	}{preflightVersion, p.Agent.Image, p.Agent.User, plan.WorkspaceDigest(pc), pc.Setup, pc.CaseDirDigest,
		[2]digest.Digest{p.Environments[pc.Environment].Digest, p.Environments[env].Digest},
		*a.Run, a.Shell, timeout, on, map[bool]digest.Digest{true: ref}[on == PreflightReference]})
	return digest.FromBytes(b)
}

// referenceDigest is the digest of a case's reference solution: a folder's tree, or a
// patch file's bytes.
func referenceDigest(suiteDir, rel string) (digest.Digest, error) {
	path := filepath.Join(suiteDir, filepath.FromSlash(rel))
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("read reference: %w", err)
	}
	if fi.IsDir() {
		t, err := plan.HashTree(path)
		if err != nil {
			return "", fmt.Errorf("read reference %s: %w", rel, err)
		}
		return t.ContentDigest(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read reference: %w", err)
	}
	return digest.FromBytes(b), nil
}

// runPreflight runs the jobs' checks, a case's workspace at a time.
func runPreflight(ctx context.Context, p *plan.Plan, opts Options, out string, st *store.Store, jobs []preflightJob) ([]PreflightCheck, error) {
	in := newInputs(p, opts.SuiteDir, st)
	for _, j := range jobs {
		if err := in.add(j.pc, j.arm); err != nil {
			return nil, err
		}
	}
	if err := in.pin(); err != nil {
		return nil, err
	}
	e, err := newBackend(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	runID := cell.NewRunID()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		e.Sweep(sctx, docker.LabelRun+"="+runID)
	}()
	pf := &preflighter{plan: p, opts: opts, store: st, engine: e, images: images.New(e, p, st, opts.logger()), out: out, runID: runID}
	var mu sync.Mutex
	var got []PreflightCheck
	var fatal error
	bounded.ForEach(ctx, max(opts.Jobs, 1), jobs, func(j preflightJob) {
		chs, err := pf.run(ctx, j)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && fatal == nil {
			fatal = fmt.Errorf("preflight case %s: %w", j.pc.ID, err)
		}
		got = append(got, chs...)
	})
	if fatal == nil {
		fatal = ctx.Err()
	}
	return got, fatal
}

// cannotRunLine is a shell's or env's word that a command or interpreter was not found or
// could not be executed; the name is the last colon-free part before the message.
var cannotRunLine = regexp.MustCompile(`(?m)(?:^|: )([^:\n]+): (command not found|not found|No such file or directory|Permission denied|cannot execute[^\n]*)\s*$|exec: "([^"]+)": (executable file not found in \$PATH)`)

var quotedName = regexp.MustCompile(`(?:^|\s)['\x{2018}]([^'\x{2019}]+)['\x{2019}]\s*$`)

// cannotRun says why a check's outcome shows it could not run at all ("" when it ran): it
// exited 126 or 127 (POSIX: found but not executable, or not found) for a tool or an
// interpreter the environment lacks. A workspace file that is missing or not executable
// (./build.sh, $WORLD/run.sh, sh check.sh) is the agent's to make: that check ran, and
// failed.
func cannotRun(res *docker.ExecOutcome) string {
	if res.TimedOut || res.ExitCode != 126 && res.ExitCode != 127 {
		return ""
	}
	ms := cannotRunLine.FindAllStringSubmatch(string(res.Output), -1)
	if len(ms) == 0 {
		return fmt.Sprintf("exit %d", res.ExitCode)
	}
	m := ms[len(ms)-1]
	name, msg := strings.TrimSpace(m[1]), m[2]
	if m[3] != "" {
		name, msg = m[3], m[4]
	}
	// env quotes the interpreter it could not find ('python3', can't execute 'python3').
	q := quotedName.FindStringSubmatch(name)
	quoted := q != nil
	if quoted {
		name = q[1]
	}
	workspace := strings.HasPrefix(name, docker.Workspace+"/") || strings.Contains(name, "/") && !strings.HasPrefix(name, "/")
	if workspace || msg == "No such file or directory" && !quoted && !strings.Contains(name, "/") {
		return ""
	}
	return fmt.Sprintf("exit %d: %s: %s", res.ExitCode, name, msg)
}
