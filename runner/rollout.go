package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/backend"

	"github.com/skillgate/skillgate/runner/spend"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/agent"

	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/skillgate/skillgate/runner/docker"

	"github.com/skillgate/skillgate/runner/redact"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// runAdmitted runs a cell once the budget admits it (started is called then) and
// records its cost in the ledger, whatever became of it. A cell the cap leaves no
// room for is not started: the error wraps ErrSpendCap.
func (r *cellRunner) runAdmitted(ctx context.Context, c plan.Cell, kind string, started func(string)) (*store.Rollout, error) {
	res, err := r.budget.AdmitSession(ctx, kind, c.ID, c.Rollout)
	if err != nil {
		return nil, err
	}
	started(c.ID)
	ro, err := r.run(ctx, c)
	var u gateway.CellUsage
	if r.gateway != nil {
		u = r.gateway.Usage(c.ID)
	}
	usd, estimated, priced := spend.Cost(r.plan.Agent.Prices, u.Tokens, u.Requests > 0)
	if serr := r.budget.Settle(res, store.SpendEntry{Kind: kind, ID: c.ID, Rollout: c.Rollout, USD: usd, Estimated: estimated}, priced); serr != nil && err == nil {
		err = serr
	}
	return ro, err
}

// startCellRunner starts the gateway when the agent reaches a model and
// checks a real provider's key (before the engine, so a refused key stops
// the run within seconds), connects to the engine and removes what a dead
// run into the same folder left. The caller fills in the cases and arms it
// will run; stop releases everything.
func startCellRunner(ctx context.Context, p *plan.Plan, opts Options, out string, st *store.Store, budget *spend.Budget) (r *cellRunner, stop func(), err error) {
	var gateway *gateway.Gateway
	var secrets []redact.Secret
	if usesGateway(p) {
		if budget.Capped() && gatewayPriced(p) {
			opts.spendGate = budget // every model call admitted under the cap
		}
		if gateway, secrets, err = startGateway(p, opts, out); err != nil {
			return nil, nil, err
		}
		if err = preflight(ctx, gateway, p, opts.Log); err != nil {
			gateway.Close()
			os.RemoveAll(filepath.Dir(gateway.Socket()))
			return nil, nil, err
		}
	}
	closeGateway := func() {
		if gateway != nil {
			gateway.Close()
			os.RemoveAll(filepath.Dir(gateway.Socket()))
		}
	}
	engine, err := newBackend(ctx, opts)
	if err != nil {
		closeGateway()
		return nil, nil, err
	}
	outLabel := outLabel(out)
	if n, err := engine.Sweep(ctx, docker.LabelOut+"="+outLabel); err != nil {
		engine.Close()
		closeGateway()
		return nil, nil, err
	} else if n > 0 {
		fmt.Fprintf(opts.Log, "removed %d containers left by an interrupted run\n", n)
	}
	r = &cellRunner{
		plan: p, store: st, engine: engine, out: out, runID: newRunID(), outLabel: outLabel,
		images: images.New(engine, p, st, opts.Log),
		cases:  map[string]plan.PlanCase{}, arms: map[string]plan.PlanArm{},
		gateway: gateway, budget: budget,
		git: plan.SuiteGitRevision(p, opts.SuiteDir, out),
	}
	r.redact = redact.NewNamed(p, secrets...)
	return r, func() {
		closeGateway()
		engine.Close()
		r.closeSetups()
	}, nil
}

// sweep removes every container of this run, even once ctx is cancelled:
// nothing of an interrupted run outlives it.
func (r *cellRunner) sweep(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	r.engine.Sweep(sctx, docker.LabelRun+"="+r.runID)
}

// cellRunner runs one cell at a time per worker.
type cellRunner struct {
	plan     *plan.Plan
	store    *store.Store
	engine   backend.Backend
	images   *images.Images
	out      string
	outLabel string
	runID    string
	gateway  *gateway.Gateway
	budget   *spend.Budget
	redact   *redact.Redactor
	cases    map[string]plan.PlanCase
	arms     map[string]plan.PlanArm
	// git is where the suite's repository stood when the run started.
	git *plan.GitRevision
	// setups are the cases' setup runs, shared by the trials of a cell image.
	setups setups
	// indexes are the initial workspaces the collections compare with.
	indexes workspaceIndexes
}

// run executes one cell and stores its rollout. A Docker or skillgate
// failure is stored as an invalid rollout, so the run goes on and the next
// run retries the cell; only a failure to store is returned.
func (r *cellRunner) run(ctx context.Context, c plan.Cell) (*store.Rollout, error) {
	start := time.Now()
	pc := r.cases[c.Case]
	arm := plan.CaseArm(r.plan, pc, r.arms[c.Arm])
	ro := &store.Rollout{Key: c.Rollout, Plan: r.plan.Digest, Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial,
		Image: r.plan.Agent.Image, Changes: []grade.FileChange{}, StartedAt: start.UTC().Round(time.Millisecond),
		Telemetry: agent.Telemetry{Skills: []grade.RoutingEvent{}, References: []grade.RoutingEvent{}},
		Inputs:    plan.RolloutInputs{Fixture: pc.FixtureDigest, Overlay: pc.OverlayDigest, Skills: plan.InstalledSkills(r.plan, arm), Git: r.git, Harness: pipeline.Version()}}
	staged, err := r.store.Stage()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staged) // gone once committed
	invalid := func(err error) (*store.Rollout, error) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ro.Status, ro.Error = store.StatusInvalid, r.redact.String(err.Error())
		ro.Durations.Total = time.Since(start).Seconds()
		return ro, r.store.Commit(staged, ro)
	}
	var spec docker.ContainerSpec
	var oc *docker.ContainerOutcome
	var col *workspaceCollector
	var setupFailed string
	err = r.images.WithCellImage(ctx, pc, arm, func(ref, cellID string) error {
		_, ro.ImageID, ro.Inputs.AgentVersion, _ = r.images.AgentImageIn(ctx, pc.Environment)
		ro.Inputs.AgentImage, ro.Inputs.CellImage = ro.ImageID, cellID
		ro.Inputs.Environment = r.images.EnvironmentInputs(ctx, pc.Environment)
		ro.Durations.Image = time.Since(start).Seconds()
		files := filepath.Join(staged, store.DirFiles)
		var baseline []grade.FileChange
		image := ref
		if pc.Setup != nil {
			sb := r.setupImage(ctx, c, pc, arm, ref, cellID)
			if sb.err != nil {
				r.forgetSetup(pc, arm, cellID)
				return sb.err
			}
			rec := sb.record
			ro.Setup = &rec
			ro.Durations.Setup = rec.Seconds
			if sb.failed != "" {
				setupFailed = sb.failed
				return nil
			}
			if err := linkBlobs(rec.Changes, sb.blobs, files); err != nil {
				return err
			}
			baseline, image = rec.Changes, sb.ref
		}
		var err error
		if col, err = r.collector(pc, arm, files, baseline); err != nil {
			return err
		}
		if spec, err = r.spec(c, pc, arm, image, col); err != nil {
			return err
		}
		oc, err = r.engine.RunContainer(ctx, spec)
		if errors.Is(err, docker.ErrImageMissing) && pc.Setup != nil {
			r.forgetSetup(pc, arm, cellID) // its image went: the retry runs the setup again
		}
		return err
	})
	if err == nil && setupFailed != "" {
		err = errors.New(setupFailed)
	}
	if err != nil {
		return invalid(err)
	}
	ro.ExitCode = oc.ExitCode
	switch {
	case oc.TimedOut:
		ro.Status = store.StatusTimeout
	case oc.OOMKilled:
		ro.Status = store.StatusOOM
	case oc.ExitCode != 0:
		ro.Status = store.StatusFailed
	default:
		ro.Status = store.StatusCompleted
	}
	stdout, stderr := r.redact.Bytes(oc.Stdout), r.redact.Bytes(oc.Stderr)
	sess := agent.ParseSession(r.plan.Agent.Kind, stdout, stderr)
	if rep := r.plan.Agent.Report; rep != nil {
		sess = agent.ApplyReport(sess, rep.Answer, rep.Skills)
	}
	ro.Answer, ro.Telemetry = sess.Answer, sess.Telemetry
	if len(sess.Messages) > 1 || len(sess.Messages) == 1 && sess.Messages[0] != sess.Answer {
		ro.Messages = sess.Messages
	}
	if r.gateway != nil {
		u := r.gateway.Usage(c.ID)
		for i := range u.Faults {
			u.Faults[i].Message = r.redact.String(u.Faults[i].Message)
		}
		if u.Unrecovered != "" {
			// The provider's doing, not the agent's: invalid, so it reruns.
			u.Unrecovered = r.redact.String(u.Unrecovered)
			ro.Status, ro.Error = store.StatusInvalid, u.Unrecovered
		}
		ro.Gateway = &u
		if ro.Telemetry.Model == "" {
			ro.Telemetry.Model = u.ModelAnswered
		}
		if ro.Telemetry.Tokens == nil {
			ro.Telemetry.Tokens = u.Tokens
		}
	}
	ro.Transcript = store.Transcript{StdoutBytes: oc.StdoutBytes, StderrBytes: oc.StderrBytes, Cap: spec.OutputCap, Truncated: oc.Truncated}
	ro.Collection = store.Collection(oc.Collection)
	ro.Changes = col.changes(oc.Collection.Method == "api" && oc.Collection.Cut == "")
	ro.Durations.Create = oc.Durations.Create.Seconds()
	ro.Durations.Start = oc.Durations.Start.Seconds()
	ro.Durations.Agent = oc.Durations.Agent.Seconds()
	ro.Durations.Collect = oc.Durations.Collect.Seconds()
	for name, data := range map[string][]byte{store.FileStdout: stdout, store.FileStderr: stderr, store.FileAnswer: []byte(ro.Answer)} {
		if err := os.WriteFile(filepath.Join(staged, name), data, 0o644); err != nil {
			return nil, fmt.Errorf("store rollout %s: %w", c.ID, err)
		}
	}
	ro.Durations.Total = time.Since(start).Seconds()
	return ro, r.store.Commit(staged, ro)
}

// collector reads back a cell's workspace into blobs, within the plan's limits, against
// the initial workspace with the setup's changes (baseline) applied.
func (r *cellRunner) collector(pc plan.PlanCase, arm plan.PlanArm, blobs string, baseline []grade.FileChange) (*workspaceCollector, error) {
	lim := r.plan.Limits.Collect
	file, err := suite.ParseBytes(lim.FileBytes)
	if err != nil {
		return nil, fmt.Errorf("read limits.collect.fileBytes: %w", err)
	}
	total, err := suite.ParseBytes(lim.TotalBytes)
	if err != nil {
		return nil, fmt.Errorf("read limits.collect.totalBytes: %w", err)
	}
	return newIndexedCollector(r.indexes.of(r.plan, pc, arm, baseline), blobs, r.redact, workspaceLimits{FileBytes: file, TotalBytes: total}), nil
}

// workspaceIndexes are the initial workspaces of a run's cells, each indexed once, by
// case, arm and the changes of the case's setup.
type workspaceIndexes struct {
	mu sync.Mutex
	m  map[string]*workspaceIndexOnce
}

type workspaceIndexOnce struct {
	once sync.Once
	x    *workspaceIndex
}

// of is the index of the initial workspace of pc and arm with the setup's changes
// (baseline) applied.
func (xs *workspaceIndexes) of(p *plan.Plan, pc plan.PlanCase, arm plan.PlanArm, baseline []grade.FileChange) *workspaceIndex {
	b, _ := json.Marshal(baseline)
	key := pc.ID + "\x00" + arm.Name + "\x00" + digest.FromBytes(b).String()
	xs.mu.Lock()
	if xs.m == nil {
		xs.m = map[string]*workspaceIndexOnce{}
	}
	o := xs.m[key]
	if o == nil {
		o = &workspaceIndexOnce{}
		xs.m[key] = o
	}
	xs.mu.Unlock()
	o.once.Do(func() { o.x = newWorkspaceIndex(withBaseline(initialWorkspace(p, pc, arm), baseline)) })
	return o.x
}

// spec is the hardened container of a cell, its arm's skills in it (skillTrees).
func (r *cellRunner) spec(c plan.Cell, pc plan.PlanCase, arm plan.PlanArm, image string, col *workspaceCollector) (docker.ContainerSpec, error) {
	lim := r.plan.Limits
	timeout, err := time.ParseDuration(lim.Timeout)
	if err != nil {
		return docker.ContainerSpec{}, fmt.Errorf("parse limits.timeout %q: %w", lim.Timeout, err)
	}
	collectTimeout, err := time.ParseDuration(lim.Collect.Timeout)
	if err != nil {
		return docker.ContainerSpec{}, fmt.Errorf("parse limits.collect.timeout %q: %w", lim.Collect.Timeout, err)
	}
	mem, err := suite.ParseBytes(lim.Memory)
	if err != nil {
		return docker.ContainerSpec{}, fmt.Errorf("read limits.memory: %w", err)
	}
	output, err := suite.ParseBytes(lim.Output)
	if err != nil {
		return docker.ContainerSpec{}, fmt.Errorf("read limits.output: %w", err)
	}
	trees, err := r.images.SkillTrees(arm)
	if err != nil {
		return docker.ContainerSpec{}, err
	}
	hidden, err := r.images.UserSkillTrees()
	if err != nil {
		return docker.ContainerSpec{}, err
	}
	trees = append(trees, hidden...)
	in, err := newCellInput(r.plan, pc, arm)
	if err != nil {
		return docker.ContainerSpec{}, err
	}
	in.session = SessionID(c.Rollout)
	cmd, stdin, files, err := cellCommand(r.plan, in)
	if err != nil {
		return docker.ContainerSpec{}, err
	}
	env := cellEnv(r.plan, pc, arm, in)
	var gatewayDir string
	if r.gateway != nil {
		cmd = append([]string{gateway.ForwarderPath, "-exec"}, cmd...)
		env = append(env, agent.Of(r.plan.Agent.Kind).Env(r.plan.Agent.Model, r.gateway.NewCellToken(c.ID))...)
		gatewayDir = filepath.Dir(r.gateway.Socket()) + ":" + cellGatewayMount
	}
	return docker.ContainerSpec{
		Image:      image,
		Cmd:        cmd,
		Env:        env,
		Gateway:    gatewayDir,
		User:       r.plan.Agent.User,
		WorkingDir: docker.Workspace,
		Labels: map[string]string{
			docker.LabelRun: r.runID, docker.LabelOut: r.outLabel, docker.LabelCell: c.ID,
			docker.LabelPlan: r.plan.Digest.Encoded()[:16], docker.LabelSuite: r.plan.Suite.Name,
		},
		Memory:        mem,
		NanoCPUs:      int64(lim.CPUs * 1e9),
		PidsLimit:     lim.Pids,
		Timeout:       timeout,
		OutputCap:     output,
		CollectPrefix: docker.Workspace,
		Collect:       col.visit,
		CollectLimits: docker.CollectLimits{Entries: lim.Collect.Entries, Timeout: collectTimeout},
		Trees:         trees,
		Files:         append(in.files(), files...),
		Stdin:         stdin,
	}, nil
}

func newRunID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
