package cell

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

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/agent"

	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/skillgate/skillgate/runner/redact"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// Sweep removes every container of this run, even once ctx is cancelled:
// nothing of an interrupted run outlives it.
func (r *Runner) Sweep(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	r.Engine.Sweep(sctx, backend.LabelRun+"="+r.RunID)
}

// Runner runs one cell at a time per worker: its image, its setup, its
// container, its workspace's changes and its stored rollout. The caller
// (the runner's root) fills in its engine, gateway, cases and arms.
type Runner struct {
	Plan     *plan.Plan
	Store    *store.Store
	Engine   backend.Backend
	Images   *images.Images
	Out      string
	OutLabel string
	RunID    string
	Gateway  *gateway.Gateway
	Redact   *redact.Redactor
	Cases    map[string]plan.PlanCase
	Arms     map[string]plan.PlanArm
	// git is where the suite's repository stood when the run started.
	Git *plan.GitRevision
	// setups are the cases' setup runs, shared by the trials of a cell image.
	setups setups
	// indexes are the initial workspaces the collections compare with.
	indexes workspaceIndexes
}

// Run executes one cell and stores its rollout. A Docker or skillgate
// failure is stored as an invalid rollout, so the run goes on and the next
// run retries the cell; only a failure to store is returned.
func (r *Runner) Run(ctx context.Context, c plan.Cell) (*store.Rollout, error) {
	start := time.Now()
	pc := r.Cases[c.Case]
	arm := plan.CaseArm(r.Plan, pc, r.Arms[c.Arm])
	ro := &store.Rollout{Key: c.Rollout, Plan: r.Plan.Digest, Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial,
		Image: r.Plan.Agent.Image, Changes: []grade.FileChange{}, StartedAt: start.UTC().Round(time.Millisecond),
		Telemetry: agent.Telemetry{Skills: []grade.RoutingEvent{}, References: []grade.RoutingEvent{}},
		Inputs:    plan.RolloutInputs{Fixture: pc.FixtureDigest, Overlay: pc.OverlayDigest, Skills: plan.InstalledSkills(r.Plan, arm), Git: r.Git, Harness: pipeline.Version()}}
	staged, err := r.Store.Stage()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staged) // gone once committed
	invalid := func(err error) (*store.Rollout, error) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ro.Status, ro.Error = store.StatusInvalid, r.Redact.String(err.Error())
		ro.Durations.Total = time.Since(start).Seconds()
		return ro, r.Store.Commit(staged, ro)
	}
	var spec backend.ContainerSpec
	var oc *backend.ContainerOutcome
	var col *workspaceCollector
	var setupFailed string
	err = r.Images.WithCellImage(ctx, pc, arm, func(ref, cellID string) error {
		_, ro.ImageID, ro.Inputs.AgentVersion, _ = r.Images.AgentImageIn(ctx, pc.Environment)
		ro.Inputs.AgentImage, ro.Inputs.CellImage = ro.ImageID, cellID
		ro.Inputs.Environment = r.Images.EnvironmentInputs(ctx, pc.Environment)
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
		if col, err = r.Collector(pc, arm, files, baseline); err != nil {
			return err
		}
		if spec, err = r.spec(c, pc, arm, image, col); err != nil {
			return err
		}
		oc, err = r.Engine.RunContainer(ctx, spec)
		if errors.Is(err, backend.ErrImageMissing) && pc.Setup != nil {
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
	stdout, stderr := r.Redact.Bytes(oc.Stdout), r.Redact.Bytes(oc.Stderr)
	sess := agent.ParseSession(r.Plan.Agent.Kind, stdout, stderr)
	if rep := r.Plan.Agent.Report; rep != nil {
		sess = agent.ApplyReport(sess, rep.Answer, rep.Skills)
	}
	ro.Answer, ro.Telemetry = sess.Answer, sess.Telemetry
	if len(sess.Messages) > 1 || len(sess.Messages) == 1 && sess.Messages[0] != sess.Answer {
		ro.Messages = sess.Messages
	}
	if r.Gateway != nil {
		u := r.Gateway.Usage(c.ID)
		for i := range u.Faults {
			u.Faults[i].Message = r.Redact.String(u.Faults[i].Message)
		}
		if u.Unrecovered != "" {
			// The provider's doing, not the agent's: invalid, so it reruns.
			u.Unrecovered = r.Redact.String(u.Unrecovered)
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
	return ro, r.Store.Commit(staged, ro)
}

// collector reads back a cell's workspace into blobs, within the plan's limits, against
// the initial workspace with the setup's changes (baseline) applied.
func (r *Runner) Collector(pc plan.PlanCase, arm plan.PlanArm, blobs string, baseline []grade.FileChange) (*workspaceCollector, error) {
	lim := r.Plan.Limits.Collect
	file, err := suite.ParseBytes(lim.FileBytes)
	if err != nil {
		return nil, fmt.Errorf("read limits.collect.fileBytes: %w", err)
	}
	total, err := suite.ParseBytes(lim.TotalBytes)
	if err != nil {
		return nil, fmt.Errorf("read limits.collect.totalBytes: %w", err)
	}
	return newIndexedCollector(r.indexes.of(r.Plan, pc, arm, baseline), blobs, r.Redact, workspaceLimits{FileBytes: file, TotalBytes: total}), nil
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
	o.once.Do(func() { o.x = newWorkspaceIndex(withBaseline(InitialWorkspace(p, pc, arm), baseline)) })
	return o.x
}

// spec is the hardened container of a cell, its arm's skills in it (skillTrees).
func (r *Runner) spec(c plan.Cell, pc plan.PlanCase, arm plan.PlanArm, image string, col *workspaceCollector) (backend.ContainerSpec, error) {
	lim := r.Plan.Limits
	timeout, err := time.ParseDuration(lim.Timeout)
	if err != nil {
		return backend.ContainerSpec{}, fmt.Errorf("parse limits.timeout %q: %w", lim.Timeout, err)
	}
	collectTimeout, err := time.ParseDuration(lim.Collect.Timeout)
	if err != nil {
		return backend.ContainerSpec{}, fmt.Errorf("parse limits.collect.timeout %q: %w", lim.Collect.Timeout, err)
	}
	mem, err := suite.ParseBytes(lim.Memory)
	if err != nil {
		return backend.ContainerSpec{}, fmt.Errorf("read limits.memory: %w", err)
	}
	output, err := suite.ParseBytes(lim.Output)
	if err != nil {
		return backend.ContainerSpec{}, fmt.Errorf("read limits.output: %w", err)
	}
	trees, err := r.Images.SkillTrees(arm)
	if err != nil {
		return backend.ContainerSpec{}, err
	}
	hidden, err := r.Images.UserSkillTrees()
	if err != nil {
		return backend.ContainerSpec{}, err
	}
	trees = append(trees, hidden...)
	in, err := newCellInput(r.Plan, pc, arm)
	if err != nil {
		return backend.ContainerSpec{}, err
	}
	in.session = SessionID(c.Rollout)
	cmd, stdin, files, err := cellCommand(r.Plan, in)
	if err != nil {
		return backend.ContainerSpec{}, err
	}
	env := cellEnv(r.Plan, pc, arm, in)
	var gatewayDir string
	if r.Gateway != nil {
		cmd = append([]string{gateway.ForwarderPath, "-exec"}, cmd...)
		env = append(env, agent.Of(r.Plan.Agent.Kind).Env(r.Plan.Agent.Model, r.Gateway.NewCellToken(c.ID))...)
		gatewayDir = filepath.Dir(r.Gateway.Socket()) + ":" + CellGatewayMount
	}
	return backend.ContainerSpec{
		Image:      image,
		Cmd:        cmd,
		Env:        env,
		Gateway:    gatewayDir,
		User:       r.Plan.Agent.User,
		WorkingDir: backend.Workspace,
		Labels: map[string]string{
			backend.LabelRun: r.RunID, backend.LabelOut: r.OutLabel, backend.LabelCell: c.ID,
			backend.LabelPlan: r.Plan.Digest.Encoded()[:16], backend.LabelSuite: r.Plan.Suite.Name,
		},
		Memory:        mem,
		NanoCPUs:      int64(lim.CPUs * 1e9),
		PidsLimit:     lim.Pids,
		Timeout:       timeout,
		OutputCap:     output,
		CollectPrefix: backend.Workspace,
		Collect:       col.visit,
		CollectLimits: backend.CollectLimits{Entries: lim.Collect.Entries, Timeout: collectTimeout},
		Trees:         trees,
		Files:         append(in.files(), files...),
		Stdin:         stdin,
	}, nil
}

func NewRunID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
