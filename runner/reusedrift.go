package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/runner/reuse"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// identity is who answered a rollout: the models the provider said
// answered, the agent CLI's version as it reported it, the agent image's
// version label.
type identity struct {
	models  []string
	cli     string
	version string
}

func identityOf(ro *store.Rollout) (group string, id identity) {
	group = ro.Telemetry.Model
	if ro.Gateway != nil {
		if ro.Gateway.ModelAsked != "" {
			group = ro.Gateway.ModelAsked
		}
		for _, m := range strings.Split(ro.Gateway.ModelAnswered, ",") {
			if m = strings.TrimSpace(m); m != "" {
				id.models = append(id.models, m)
			}
		}
	}
	id.cli, id.version = ro.Telemetry.AgentVersion, ro.Inputs.AgentVersion
	return group, id
}

// refuseDrifted compares, for each model the cells asked for, the reused
// rollouts (reused.json) with those this run made: a provider that now
// answers under another model or version, or an agent of another version,
// refuses the reuse of that model's cells without a test: they are made
// invalid, naming why, taken out of the ledger and run again here.
func refuseDrifted(ctx context.Context, p *plan.Plan, opts Options, sum *Summary) (*Summary, error) {
	cells, err := selectCells(p, opts)
	if err != nil {
		return sum, err
	}
	_, st, unlock, err := openRunFolder(opts.Out)
	if err != nil {
		return sum, err
	}
	ledger, err := reuse.Ledger(st.Dir)
	if err != nil || len(ledger) == 0 {
		unlock()
		return sum, err
	}
	fresh := map[string]*identities{}
	taken := map[string][]*store.Rollout{}
	done := map[digest.Digest]bool{}
	for _, c := range cells {
		ro, ok, _ := st.Rollout(c.Rollout)
		if !ok || done[c.Rollout] || ro.Status == store.StatusInvalid {
			continue
		}
		done[c.Rollout] = true
		g, _ := identityOf(ro)
		if _, ok := ledger[c.Rollout]; ok {
			taken[g] = append(taken[g], ro)
			continue
		}
		if fresh[g] == nil {
			fresh[g] = newIdentities()
		}
		fresh[g].add(ro)
	}
	refused := map[digest.Digest]bool{}
	var why []string
	for _, g := range sortedKeys((taken)) {
		f := fresh[g]
		if f == nil {
			continue // no cell of this model ran here: nothing to compare with
		}
		reason := f.driftFrom(g, taken[g], "in this run")
		if reason == "" {
			continue
		}
		why = append(why, fmt.Sprintf("model %s: %s", g, reason))
		for _, ro := range taken[g] {
			refused[ro.Key] = true
			if err := st.Invalidate(ro.Key, "reuse refused: "+reason, nil); err != nil {
				unlock()
				return sum, err
			}
		}
	}
	if len(refused) == 0 {
		unlock()
		return sum, nil
	}
	err = reuse.Forget(st, refused)
	unlock()
	if err != nil {
		return sum, err
	}
	for _, w := range why {
		fmt.Fprintf(opts.Log, "reuse refused for %s: %d reused cells run again\n", w, len(refused))
	}
	again := opts
	again.Reuse = ""
	next, err := Run(ctx, p, again)
	if next != nil {
		next.Taken = max(0, sum.Taken-len(refused))
		next.Ran += sum.Ran
		next.Reused -= sum.Ran
		next.ReuseRefused = append(slices.Clone(sum.ReuseRefused), why...)
		next.Sentinels = sum.Sentinels
	}
	return next, err
}

// identities are who answered a set of rollouts.
type identities struct {
	models, cli, version map[string]bool
	n                    int
}

func newIdentities() *identities {
	return &identities{models: map[string]bool{}, cli: map[string]bool{}, version: map[string]bool{}}
}

func (f *identities) add(ro *store.Rollout) {
	f.n++
	_, id := identityOf(ro)
	for _, m := range id.models {
		f.models[m] = true
	}
	f.cli[id.cli], f.version[id.version] = true, true
}

// driftFrom says how the taken rollouts of model g were answered by
// another model or version, or another agent, than these (seen where);
// "" when they were not, or when there are none of these to compare with.
func (f *identities) driftFrom(g string, taken []*store.Rollout, where string) string {
	if f.n == 0 {
		return ""
	}
	for _, ro := range taken {
		_, id := identityOf(ro)
		for _, m := range id.models {
			if len(f.models) > 0 && !f.models[m] {
				return fmt.Sprintf("the provider answered %s as %s %s, as %s in the reused rollouts", g, strings.Join(sortedKeys(f.models), ", "), where, m)
			}
		}
		if !f.cli[id.cli] {
			return fmt.Sprintf("the agent reported version %s %s, %s in the reused rollouts", strings.Join(sortedKeys(f.cli), ", "), where, id.cli)
		}
		if !f.version[id.version] {
			return fmt.Sprintf("the agent image is version %s %s, %s in the reused rollouts", strings.Join(sortedKeys(f.version), ", "), where, id.version)
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
