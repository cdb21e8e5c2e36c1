package plan

import (
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// PlanEnvironment is a suite environment and the digest of all that decides its image
// and what runs in it: its Debian release and packages, its Dockerfile folder's tree and
// the environment it is built from, its image reference and digest, its env.
type PlanEnvironment struct {
	suite.Environment
	// Tree is the Dockerfile folder's, for a dockerfile environment.
	Tree   *Tree         `json:"tree,omitempty"`
	Digest digest.Digest `json:"digest"`
}

// environmentKey is what an environment's digest covers.
type environmentKey struct {
	Debian     *suite.Debian     `json:"debian,omitempty"`
	Dockerfile digest.Digest     `json:"dockerfile,omitempty"`
	From       digest.Digest     `json:"from,omitempty"`
	Image      *suite.ImageRef   `json:"image,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
}

// compileEnvironments digests every environment the suite defines, hashing the
// Dockerfile folders; an environment built from another digests that one's digest too.
func compileEnvironments(s *suite.Suite, p *Plan) error {
	if len(s.Environments) == 0 {
		return nil
	}
	p.Environments = map[string]PlanEnvironment{}
	var visit func(name string, depth int) (digest.Digest, error)
	visit = func(name string, depth int) (digest.Digest, error) {
		if pe, ok := p.Environments[name]; ok {
			return pe.Digest, nil
		}
		env, ok := s.Environments[name]
		if !ok {
			return "", fmt.Errorf("compile plan: no environment %s", name)
		}
		if depth > len(s.Environments) {
			return "", fmt.Errorf("compile plan: environment %s is built from itself", name)
		}
		pe := PlanEnvironment{Environment: env}
		key := environmentKey{Image: env.Image}
		if len(env.Env) > 0 {
			key.Env = env.Env
		}
		if d := env.Debian; d != nil {
			key.Debian = &suite.Debian{Release: d.Release, Packages: DebianPackages(d.Packages)}
		}
		if df := env.Dockerfile; df != nil {
			dir, err := s.Resolve(df.Path)
			if err != nil {
				return "", fmt.Errorf("compile plan: environment %s: %w", name, err)
			}
			t, err := HashLive(dir)
			if err != nil {
				return "", fmt.Errorf("compile plan: environment %s: %w", name, err)
			}
			pe.Tree, key.Dockerfile = &t, t.Digest
			if df.From != "" {
				if key.From, err = visit(df.From, depth+1); err != nil {
					return "", err
				}
			}
		}
		pe.Digest = DigestJSON(key)
		p.Environments[name] = pe
		return pe.Digest, nil
	}
	for _, name := range slices.Sorted(maps.Keys(s.Environments)) {
		if _, err := visit(name, 0); err != nil {
			return err
		}
	}
	return nil
}

// DebianPackages is a package list as it is digested and installed: sorted, each once.
func DebianPackages(pkgs []string) []string {
	out := slices.Clone(pkgs)
	slices.Sort(out)
	return slices.Compact(out)
}

// caseInputs fills in a case's environment (its own, else the suite's default) and the
// digest of its case folder, hashing the folder once per path.
func caseInputs(s *suite.Suite, p *Plan, pc *PlanCase) error {
	pc.Environment = s.EnvironmentOf(pc.Case)
	if pc.Environment != "" {
		pe, ok := p.Environments[pc.Environment]
		if !ok {
			return fmt.Errorf("compile plan: case %s: no environment %s", pc.ID, pc.Environment)
		}
		pc.EnvironmentDigest = pe.Digest
	}
	if pc.CaseDir == "" {
		return nil
	}
	key := path.Clean(pc.CaseDir)
	t, ok := p.CaseDirs[key]
	if !ok {
		dir, err := s.Resolve(pc.CaseDir)
		if err != nil {
			return fmt.Errorf("compile plan: case %s: %w", pc.ID, err)
		}
		if t, err = HashLive(dir); err != nil {
			return fmt.Errorf("compile plan: case %s: %w", pc.ID, err)
		}
		if p.CaseDirs == nil {
			p.CaseDirs = map[string]Tree{}
		}
		p.CaseDirs[key] = t
	}
	pc.CaseDirDigest = t.Digest
	return nil
}

// setupKey is what a case's setup adds to its rollout digest: the command, its shell and
// timeout (limits.setup when it sets none), and the case folder it reads.
type setupKey struct {
	Run     string        `json:"run"`
	Shell   string        `json:"shell,omitempty"`
	Timeout string        `json:"timeout"`
	CaseDir digest.Digest `json:"caseDir,omitempty"`
}

func setupOf(pc PlanCase, lim suite.Limits) *setupKey {
	if pc.Setup == nil {
		return nil
	}
	k := &setupKey{Run: pc.Setup.Run, Shell: pc.Setup.Shell, Timeout: pc.Setup.Timeout, CaseDir: pc.CaseDirDigest}
	if k.Timeout == "" {
		k.Timeout = lim.Setup
	}
	return k
}

// checkEnvironments are the digests of the environments a case's run: checks name, by
// name: a grade input, as the cell's own environment is a rollout input.
func checkEnvironments(p *Plan, pc PlanCase) map[string]digest.Digest {
	var out map[string]digest.Digest
	for _, a := range pc.Assert {
		if a.Run == nil || a.Environment == "" {
			continue
		}
		if out == nil {
			out = map[string]digest.Digest{}
		}
		out[a.Environment] = p.Environments[a.Environment].Digest
	}
	return out
}

// rolloutLimits are the limits as the rollout key digests them: without the fields that
// enter no key (checkOutput, gateway, providerFaults) or only the keys of the cases they apply to (setup).
func rolloutLimits(l suite.Limits) suite.Limits {
	l.CheckOutput, l.Setup, l.Gateway, l.ProviderFaults = "", "", nil, 0
	return l
}
