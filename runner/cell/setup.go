package cell

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/checks"

	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// A case's setup runs before its agent, in a container of its own from the cell image:
// the agent's user, /workspace with the arm's skills in it read-only, no network, the case
// folder mounted read-only. What it
// leaves in the workspace is collected like an agent's changes, stored with each rollout
// as the baseline, and laid on the cell image as one more layer (with the paths it deleted
// removed) to make the image the agent starts from: the agent's changes are then read
// against it, so they hold only what the agent did. A setup runs once per cell image in an
// invocation, and its trials share what it left; its changes outside the workspace are not
// kept. A setup that fails makes its cells invalid, with what it printed.

// setupBuild is one setup's run, shared by the trials of a cell image.
type setupBuild struct {
	once sync.Once
	// ref and id are the image the agent starts from.
	ref, id string
	record  store.Setup
	// blobs holds the contents of record.Changes, by digest.
	blobs string
	// failed says why the setup itself failed: its cells are invalid with it.
	failed string
	// err is a failure of Docker or skillgate.
	err error
}

// setups are the setup runs of an invocation.
type setups struct {
	mu   sync.Mutex
	runs map[digest.Digest]*setupBuild
	dir  string // holds each run's blobs; removed with the runner
}

// setupKey identifies a setup run: the cell image it starts from, the skills it sees
// (the arms with skills share one cell image) and all the plan says of the setup.
func setupKey(p *plan.Plan, pc plan.PlanCase, arm plan.PlanArm, cellID string) digest.Digest {
	b, _ := json.Marshal(struct {
		Cell        string                `json:"cell"`
		Skills      []plan.InstalledSkill `json:"skills,omitempty"`
		Setup       *suite.Setup          `json:"setup"`
		CaseDir     digest.Digest         `json:"caseDir,omitempty"`
		Environment digest.Digest         `json:"environment,omitempty"`
	}{cellID, plan.InstalledSkills(p, arm), pc.Setup, pc.CaseDirDigest, pc.EnvironmentDigest})
	return digest.FromBytes(b)
}

// setupImage runs the case's setup on the cell image (once per invocation) and returns its
// outcome.
func (r *Runner) setupImage(ctx context.Context, c plan.Cell, pc plan.PlanCase, arm plan.PlanArm, cellRef, cellID string) *setupBuild {
	key := setupKey(r.Plan, pc, arm, cellID)
	r.setups.mu.Lock()
	if r.setups.runs == nil {
		r.setups.runs = map[digest.Digest]*setupBuild{}
	}
	b, ok := r.setups.runs[key]
	if !ok {
		b = &setupBuild{}
		r.setups.runs[key] = b
	}
	r.setups.mu.Unlock()
	b.once.Do(func() { r.runSetup(ctx, c, pc, arm, cellRef, cellID, key, b) })
	return b
}

// forgetSetup drops a setup run whose image the engine lost, so the next cell runs it
// again.
func (r *Runner) forgetSetup(pc plan.PlanCase, arm plan.PlanArm, cellID string) {
	r.setups.mu.Lock()
	defer r.setups.mu.Unlock()
	delete(r.setups.runs, setupKey(r.Plan, pc, arm, cellID))
}

// closeSetups removes the setup runs' blobs.
func (r *Runner) CloseSetups() {
	if r.setups.dir != "" {
		os.RemoveAll(r.setups.dir)
	}
}

func (r *Runner) runSetup(ctx context.Context, c plan.Cell, pc plan.PlanCase, arm plan.PlanArm, cellRef, cellID string, key digest.Digest, b *setupBuild) {
	lim := r.Plan.Limits
	t := pc.Setup.Timeout
	if t == "" {
		t = lim.Setup
	}
	timeout, err := time.ParseDuration(t)
	if err != nil {
		b.err = fmt.Errorf("read the setup timeout of %s: %w", pc.ID, err)
		return
	}
	mem, err := suite.ParseBytes(lim.Memory)
	if err != nil {
		b.err = fmt.Errorf("read limits.memory: %w", err)
		return
	}
	collectTimeout, err := time.ParseDuration(lim.Collect.Timeout)
	if err != nil {
		b.err = fmt.Errorf("parse limits.collect.timeout %q: %w", lim.Collect.Timeout, err)
		return
	}
	outputCap, err := checks.CheckOutputCap(lim)
	if err != nil {
		b.err = err
		return
	}
	r.setups.mu.Lock()
	if r.setups.dir == "" {
		r.setups.dir, err = r.Store.Stage()
	}
	root := r.setups.dir
	r.setups.mu.Unlock()
	if err != nil {
		b.err = err
		return
	}
	if b.blobs, err = os.MkdirTemp(root, "setup-"); err != nil {
		b.err = fmt.Errorf("run setup: %w", err)
		return
	}
	col, err := r.Collector(pc, arm, b.blobs, nil)
	if err != nil {
		b.err = err
		return
	}
	trees, err := r.Images.SkillTrees(arm)
	if err != nil {
		b.err = err
		return
	}
	env := append(images.EnvironmentEnv(r.Plan, pc.Environment), "WORLD="+backend.Workspace)
	env = append(env, checks.CaseDirEnv(pc)...)
	spec := backend.ContainerSpec{
		Image: cellRef, Cmd: []string{checks.ShellOf(pc.Setup.Shell), "-c", pc.Setup.Run}, Env: env,
		User: r.Plan.Agent.User, WorkingDir: backend.Workspace,
		Labels: map[string]string{
			backend.LabelRun: r.RunID, backend.LabelOut: r.OutLabel, backend.LabelCell: c.ID,
			backend.LabelPlan: r.Plan.Digest.Encoded()[:16], backend.LabelSuite: r.Plan.Suite.Name, backend.LabelKind: "setup",
		},
		Memory: mem, NanoCPUs: int64(lim.CPUs * 1e9), PidsLimit: lim.Pids, Timeout: timeout,
		Binds: checks.CaseDirBinds(r.Store, pc), Trees: trees, OutputCap: outputCap,
		CollectPrefix: backend.Workspace, Collect: col.visit,
		CollectLimits: backend.CollectLimits{Entries: lim.Collect.Entries, Timeout: collectTimeout},
	}
	t0 := time.Now()
	oc, err := r.Engine.RunContainer(ctx, spec)
	if err != nil {
		b.err = fmt.Errorf("run setup of %s: %w", pc.ID, err)
		return
	}
	output := r.Redact.String(strings.ToValidUTF8(string(oc.Stdout)+string(oc.Stderr), "\uFFFD"))
	b.record = store.Setup{Run: pc.Setup.Run, ExitCode: oc.ExitCode, TimedOut: oc.TimedOut, Seconds: time.Since(t0).Seconds(), Output: output, Changes: []grade.FileChange{}}
	switch {
	case oc.TimedOut:
		b.failed = fmt.Sprintf("setup timed out after %s", timeout)
	case oc.OOMKilled:
		b.failed = fmt.Sprintf("setup ran out of memory (limits.memory %s)", lim.Memory)
	case oc.ExitCode != 0:
		b.failed = fmt.Sprintf("setup failed: exit %d", oc.ExitCode)
	case oc.Collection.Cut != "":
		b.failed = "setup left more in the workspace than limits.collect keeps: " + oc.Collection.Cut
	}
	if b.failed != "" {
		if tail := LastBytes(output, 2000); tail != "" {
			b.failed += ": " + tail
		}
		return
	}
	b.record.Changes = col.changes(oc.Collection.Method == "api")
	for _, ch := range b.record.Changes {
		if ch.Cut != "" {
			b.failed = fmt.Sprintf("setup left %s, which limits.collect does not keep: %s", ch.Path, ch.Cut)
			return
		}
	}
	if len(b.record.Changes) == 0 {
		b.ref, b.id, b.record.Image = cellRef, cellID, cellID
		return
	}
	b.ref, b.id, b.err = r.buildSetupImage(ctx, pc, key, cellRef, b)
	b.record.Image = b.id
}

// buildSetupImage lays what a setup left on its cell image: the changed entries unpacked
// over it, then, as root, the paths it deleted removed.
func (r *Runner) buildSetupImage(ctx context.Context, pc plan.PlanCase, key digest.Digest, cellRef string, b *setupBuild) (ref, id string, err error) {
	uid, gid, err := images.Owner(r.Plan.Agent.User)
	if err != nil {
		return "", "", err
	}
	dockerfile := "FROM " + cellRef + "\nADD " + backend.LayerTar + " /\n"
	del := checks.DeletedList(b.record.Changes)
	if len(del) > 0 {
		dockerfile += "USER 0:0\nRUN cd " + backend.Workspace + " && xargs -0 rm -rf -- < " + checks.CheckSetupDelete + " && rm -rf " + checks.CheckDir + "\nUSER " + r.Plan.Agent.User + "\n"
	}
	bc := backend.NewBuildContext(dockerfile)
	checks.AddChanges(bc, b.record.Changes, b.blobs, uid, gid)
	if len(del) > 0 {
		bc.AddDir(strings.TrimPrefix(checks.CheckDir, "/"), 0o555, 0, 0)
		bc.AddFile(strings.TrimPrefix(checks.CheckSetupDelete, "/"), 0o444, 0, 0, del)
	}
	d, err := bc.Digest()
	if err != nil {
		return "", "", fmt.Errorf("build the setup image of %s: %w", pc.ID, err)
	}
	ikey := digest.FromString(key.String() + "\n" + d.String())
	tag := backend.CellImageRepo + ":" + ikey.Encoded()[:24]
	if got, labels, ok, err := r.Engine.ImageLabels(ctx, tag); err != nil {
		return "", "", err
	} else if ok && labels[backend.LabelCellKey] == ikey.String() {
		return tag, got, nil
	}
	labels := map[string]string{backend.LabelImage: "cell", backend.LabelSuite: r.Plan.Suite.Name, backend.LabelCellKey: ikey.String()}
	if id, err = r.Engine.BuildImage(ctx, tag, labels, bc); err != nil {
		return "", "", fmt.Errorf("build the setup image of %s: %w", pc.ID, err)
	}
	return tag, id, nil
}

// linkBlobs puts the contents of a setup's changes into a rollout's files folder.
func linkBlobs(changes []grade.FileChange, from, to string) error {
	for _, ch := range changes {
		if ch.Digest == "" {
			continue
		}
		src, dst := filepath.Join(from, ch.Digest.Encoded()), filepath.Join(to, ch.Digest.Encoded())
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		if err := os.MkdirAll(to, 0o755); err != nil {
			return fmt.Errorf("store the setup's files: %w", err)
		}
		if err := os.Link(src, dst); err == nil {
			continue
		}
		if err := copyFile(src, dst); err != nil {
			return fmt.Errorf("store the setup's files: %w", err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// LastBytes is the end of s, at most n bytes of it, trimmed.
func LastBytes(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + strings.ToValidUTF8(s[len(s)-n:], "")
	}
	return s
}

// withBaseline is the initial workspace with a setup's changes applied: what the agent
// starts from.
func withBaseline(initial map[string]plan.TreeEntry, changes []grade.FileChange) map[string]plan.TreeEntry {
	if len(changes) == 0 {
		return initial
	}
	for _, ch := range changes {
		if ch.Kind == grade.ChangeDeleted {
			delete(initial, ch.Path)
			for p := range initial {
				if strings.HasPrefix(p, ch.Path+"/") {
					delete(initial, p)
				}
			}
			continue
		}
		switch ch.Type {
		case grade.TypeSymlink:
			initial[ch.Path] = plan.TreeEntry{Digest: digest.FromString(ch.Target), Mode: "symlink", Size: int64(len(ch.Target))}
		case grade.TypeDir, grade.TypeOther:
			delete(initial, ch.Path) // a folder (or other entry) where a file was
		default:
			e := plan.TreeEntry{Digest: ch.Digest, Size: ch.Size}
			if ch.Exec {
				e.Mode = "exec"
			}
			initial[ch.Path] = e
		}
	}
	return initial
}
