package images

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/skillgate/skillgate/runner/agent"
	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/debian"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// An environment's image is resolved once per invocation, whatever the number of cells
// and checks that run in it, and built only when the engine lacks it: a Debian root is
// found by the tag and label its inputs give it (release, packages, mirror), a Dockerfile
// folder's image by its tree digest and its bases' image IDs, a pinned image by its
// digest. Nothing is ever pulled.

// EnvImageRepo is the repository of the images built from suites' Dockerfile folders.
const EnvImageRepo = "skillgate/env"

// environmentImage is the image of environment name: its reference and ID, both "" for an
// environment that only adds variables to the agent's own image.
func (im *Images) EnvironmentImage(ctx context.Context, name string) (ref, id string, err error) {
	im.mu.Lock()
	if im.envs == nil {
		im.envs = map[string]*imageBuild{}
	}
	b, ok := im.envs[name]
	if !ok {
		b = &imageBuild{}
		im.envs[name] = b
	}
	im.mu.Unlock()
	b.once.Do(func() {
		pe, ok := im.plan.Environments[name]
		switch {
		case !ok:
			b.err = fmt.Errorf("find environment %s: the plan has none", name)
		case pe.Debian != nil:
			b.ref, b.id, b.err = im.debianImage(ctx, pe.Debian.Release, pe.Debian.Packages)
		case pe.Dockerfile != nil:
			b.ref, b.id, b.err = im.dockerfileImage(ctx, name, pe)
		case pe.Image != nil:
			b.ref, b.id, b.err = im.pinnedImage(ctx, name, pe)
		}
		if b.err != nil {
			b.err = fmt.Errorf("environment %s: %w", name, b.err)
		}
	})
	return b.ref, b.id, b.err
}

// debianImage returns skillgate's Debian root of release with the extra packages,
// bootstrapping and importing it first when the engine lacks it. A root with no extra
// packages is also tagged skillgate/debian:RELEASE, the name Dockerfiles give it.
func (im *Images) debianImage(ctx context.Context, release string, packages []string) (ref, id string, err error) {
	mirror, err := debian.HostMirror(release)
	if err != nil {
		return "", "", err
	}
	root := debian.NewRoot(release, packages, mirror)
	tag := root.Tag()
	im.mu.Lock()
	if im.debs == nil {
		im.debs = map[string]*imageBuild{}
	}
	b, ok := im.debs[tag]
	if !ok {
		b = &imageBuild{ref: tag}
		im.debs[tag] = b
	}
	im.mu.Unlock()
	b.once.Do(func() {
		b.id, b.err = im.ensureDebian(ctx, root)
		if b.err == nil && len(root.Packages) == 0 {
			b.err = im.engine.Tag(ctx, tag, debian.NameTag(release))
		}
	})
	return b.ref, b.id, b.err
}

// ensureDebian finds the root's image by tag and key, else builds it, one process at a
// time per key.
func (im *Images) ensureDebian(ctx context.Context, root debian.Root) (string, error) {
	tag, key := root.Tag(), root.Key().String()
	found := func() (string, bool, error) {
		info, ok, err := im.engine.ImageInfo(ctx, tag)
		if err != nil || !ok || info.Labels[backend.LabelEnvKey] != key {
			return "", false, err
		}
		return info.ID, true, nil
	}
	if id, ok, err := found(); err != nil || ok {
		return id, err
	}
	unlock, err := debian.Lock(ctx, root.Key())
	if err != nil {
		return "", err
	}
	defer unlock()
	if id, ok, err := found(); err != nil || ok {
		return id, err // built meanwhile by another process
	}
	t0 := time.Now()
	dir, remove, err := debian.Bootstrap(ctx, root, im.log)
	if err != nil {
		return "", err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(debian.Tar(ctx, dir, pw)) }()
	labels := map[string]string{
		backend.LabelImage: "debian", backend.LabelEnvKey: key, backend.LabelDebianRelease: root.Release,
		backend.LabelDebianPackages: strings.Join(root.Includes(), " "), backend.LabelDebianMirror: root.Mirror,
	}
	id, err := im.engine.ImportImage(ctx, tag, labels, debian.ImageChanges, pr)
	pr.CloseWithError(errors.New("import ended"))
	if rerr := remove(); err == nil && rerr != nil {
		fmt.Fprintf(im.log, "%v\n", rerr)
	}
	if err != nil {
		return "", err
	}
	fmt.Fprintf(im.log, "built %s in %s\n", tag, time.Since(t0).Round(time.Second))
	return id, nil
}

// fromLine is a Dockerfile's FROM instruction: its image and its stage name.
var fromLine = regexp.MustCompile(`(?i)^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?\s*$`)

// debianName is skillgate's Debian base as a Dockerfile names it.
var debianName = regexp.MustCompile(`^` + regexp.QuoteMeta(debian.Repo) + `:([a-z]+)$`)

// dockerfileImage builds a suite's Dockerfile folder, from its snapshot, with networking
// off: BASE is the image of the environment it is built from, a FROM naming
// skillgate/debian:RELEASE gets that root built first, and any other image it names must
// be in the engine. Its tag and key digest the folder's tree and every base's image ID.
func (im *Images) dockerfileImage(ctx context.Context, name string, pe plan.PlanEnvironment) (ref, id string, err error) {
	if pe.Tree == nil {
		return "", "", errors.New("the plan has no tree of its Dockerfile folder")
	}
	dir, err := im.snapshot("environment "+name, *pe.Tree)
	if err != nil {
		return "", "", err
	}
	bc, err := backend.NewTreeContext(dir, TreeFiles(*pe.Tree))
	if err != nil {
		return "", "", err
	}
	bases := []string{"tree " + pe.Tree.Digest.String()}
	if from := pe.Dockerfile.From; from != "" {
		baseRef, baseID, err := im.EnvironmentImage(ctx, from)
		if err != nil {
			return "", "", err
		}
		if baseRef == "" {
			return "", "", fmt.Errorf("it is built from environment %s, which has no image of its own (give it debian, dockerfile or image)", from)
		}
		bc.SetBuildArg("BASE", baseRef)
		bases = append(bases, "BASE "+baseID)
	}
	froms, err := dockerfileFroms(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		return "", "", err
	}
	for _, f := range froms {
		var baseID string
		if m := debianName.FindStringSubmatch(f); m != nil {
			if _, baseID, err = im.debianImage(ctx, m[1], nil); err != nil {
				return "", "", err
			}
		} else {
			info, ok, err := im.engine.ImageInfo(ctx, f)
			if err != nil {
				return "", "", err
			}
			if !ok {
				return "", "", fmt.Errorf("its Dockerfile is FROM %s, which is not in the Docker engine: build or load it first (skillgate never pulls)", f)
			}
			baseID = info.ID
		}
		bases = append(bases, "FROM "+f+" "+baseID)
	}
	key := digest.FromString(strings.Join(bases, "\n"))
	tag := EnvImageRepo + ":" + key.Encoded()[:24]
	info, ok, err := im.engine.ImageInfo(ctx, tag)
	if err != nil {
		return "", "", err
	}
	if ok && info.Labels[backend.LabelEnvKey] == key.String() {
		return tag, info.ID, nil
	}
	t0 := time.Now()
	labels := map[string]string{backend.LabelImage: "environment", backend.LabelEnvKey: key.String(), backend.LabelSuite: im.plan.Suite.Name}
	if id, err = im.engine.BuildImage(ctx, tag, labels, bc); err != nil {
		return "", "", err
	}
	fmt.Fprintf(im.log, "built %s (environment %s) in %s\n", tag, name, time.Since(t0).Round(100*time.Millisecond))
	return tag, id, nil
}

// dockerfileFroms lists the images a Dockerfile's FROM lines name, leaving out scratch,
// earlier stages and references through build arguments.
func dockerfileFroms(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out, stages []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := fromLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		img := m[1]
		if img != "scratch" && !strings.Contains(img, "$") && !slices.Contains(stages, strings.ToLower(img)) && !slices.Contains(out, img) {
			out = append(out, img)
		}
		if m[2] != "" {
			stages = append(stages, strings.ToLower(m[2]))
		}
	}
	return out, sc.Err()
}

// pinnedImage finds an environment's image by reference and checks its digest: the image
// ID, or one of the repository digests it was pulled by.
func (im *Images) pinnedImage(ctx context.Context, name string, pe plan.PlanEnvironment) (ref, id string, err error) {
	want := pe.Image
	info, ok, err := im.engine.ImageInfo(ctx, want.Ref)
	if err != nil {
		return "", "", err
	}
	if !ok {
		return "", "", fmt.Errorf("find image %s: not in the Docker engine; load it first (skillgate never pulls)", want.Ref)
	}
	if info.ID == want.Digest {
		return want.Ref, info.ID, nil
	}
	for _, rd := range info.RepoDigests {
		if strings.HasSuffix(rd, "@"+want.Digest) {
			return want.Ref, info.ID, nil
		}
	}
	return "", "", fmt.Errorf("image %s is %s (repository digests %v), not the pinned %s", want.Ref, info.ID, info.RepoDigests, want.Digest)
}

// agentImageIn is the agent's image in environment env: the agent's own for none (or one
// that only adds variables); for claude-code and codex, skillgate's CLI layered on the
// environment's image; for any other agent, the environment's image itself.
func (im *Images) AgentImageIn(ctx context.Context, env string) (ref, id, version string, err error) {
	if env == "" {
		return im.AgentImage(ctx)
	}
	envRef, envID, err := im.EnvironmentImage(ctx, env)
	if err != nil {
		return "", "", "", err
	}
	if envRef == "" {
		return im.AgentImage(ctx)
	}
	im.mu.Lock()
	key := "environment " + env
	b, ok := im.agent[key]
	if !ok {
		b = &imageBuild{}
		im.agent[key] = b
	}
	im.mu.Unlock()
	b.once.Do(func() {
		kind := im.plan.Agent.Kind
		if !slices.Contains(agent.ImageKinds(), kind) {
			b.ref, b.id = envRef, envID
			return
		}
		version, ok := strings.CutPrefix(im.plan.Agent.Image, agent.ImageRepo(kind)+":")
		if !ok {
			b.err = fmt.Errorf("environment %s: agent image %s is not one skillgate builds, so its CLI cannot be layered on the environment's image", env, im.plan.Agent.Image)
			return
		}
		ref, err := agent.BuildImageOn(ctx, im.engine, kind, version, agent.Base{Ref: envRef, ID: envID}, im.log)
		if err != nil {
			b.err = fmt.Errorf("environment %s: %w", env, err)
			return
		}
		id, labels, ok, err := im.engine.ImageLabels(ctx, ref)
		switch {
		case err != nil:
			b.err = err
		case !ok:
			b.err = fmt.Errorf("environment %s: the engine lost %s", env, ref)
		default:
			b.ref, b.id, b.version = ref, id, labels[backend.LabelAgentVersion]
		}
	})
	return b.ref, b.id, b.version, b.err
}

// environmentInputs is what a rollout records of the environment its cell ran in.
func (im *Images) EnvironmentInputs(ctx context.Context, env string) *plan.EnvironmentInputs {
	if env == "" {
		return nil
	}
	_, id, _ := im.EnvironmentImage(ctx, env)
	return &plan.EnvironmentInputs{Name: env, Digest: im.plan.Environments[env].Digest, Image: id}
}

// EnvironmentEnv is what environment env adds to the environment of what runs in it.
func EnvironmentEnv(p *plan.Plan, env string) []string {
	pe, ok := p.Environments[env]
	if !ok {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(pe.Env)) {
		out = append(out, k+"="+pe.Env[k])
	}
	return out
}
