package runner

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/skillgate/skillgate/runner/images"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/store"
)

// PushImages pushes to registry every image the selected cells' Pods start
// from on Kubernetes: the agent's image in each environment the cells and
// their run: checks use, built first where the engine lacks it, as a run
// builds it. A cell's own content (fixture, skills, agent files) streams
// into its Pods and is not pushed. What was pushed is returned in the
// order of the plan's cases; a run with --registry registry then names
// these images by digest.
//
// Only opts.Out (whose store receives the Dockerfile folders of the
// environments built), SuiteDir, the selection and Log are read.
func PushImages(ctx context.Context, p *plan.Plan, opts Options, registry string) ([]docker.PushedImage, error) {
	if err := docker.CheckRegistry(registry); err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	cells, err := selectCells(p, opts)
	if err != nil {
		return nil, err
	}
	cases, arms := p.CasesByID(), p.ArmsByName()
	// The environments the cells and their checks run in, "" the agent's
	// own image; and the Dockerfile folders of those built from one.
	var envs []string
	var st *store.Store
	var in *inputs
	for _, c := range cells {
		pc, arm := cases[c.Case], arms[c.Arm]
		for _, env := range append([]string{pc.Environment}, caseEnvironments(pc)...) {
			if slices.Contains(envs, env) {
				continue
			}
			envs = append(envs, env)
			for _, what := range environmentTrees(p, env) {
				if in == nil {
					_, s, unlock, err := openRunFolder(opts.Out)
					if err != nil {
						return nil, err
					}
					defer unlock()
					st, in = s, newInputs(p, opts.SuiteDir, s)
				}
				if in.trees[what] == nil {
					if err := in.addTree(pc, arm, what); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	if in != nil {
		if err := in.pin(); err != nil {
			return nil, err
		}
	}
	e, err := localEngine(ctx)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	im := images.New(e, p, st, opts.Log)
	var pushed []docker.PushedImage
	var refs []string
	for _, env := range envs {
		ref, _, _, err := im.AgentImageIn(ctx, env)
		if err != nil {
			return pushed, fmt.Errorf("push images: %w", err)
		}
		if slices.Contains(refs, ref) {
			continue
		}
		refs = append(refs, ref)
		fmt.Fprintf(opts.Log, "pushing %s to %s\n", ref, registry)
		pi, err := e.PushImage(ctx, ref, registry, opts.Log)
		if err != nil {
			return pushed, err
		}
		pushed = append(pushed, pi)
	}
	return pushed, nil
}
