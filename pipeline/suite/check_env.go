package suite

import (
	"os"
	"path/filepath"
	"strings"

	"cuelang.org/go/cue"
)

// checkEnvironments checks what CUE cannot of environments, setups and case folders:
// that every name refers to an environment the suite defines, that an environment has at
// most one image, that a Dockerfile folder holds a Dockerfile and its bases do not loop,
// that case folders are folders inside the repository, and that shell and environment
// are set on run: checks only.
func checkEnvironments(c *checker, s *Suite) {
	names := sortedKeys(s.Environments)
	known := func(name string) bool { _, ok := s.Environments[name]; return ok }
	list := strings.Join(names, ", ")
	if list == "" {
		list = "none"
	}
	if s.Environment != "" && !known(s.Environment) {
		c.add([]cue.Selector{str("environment")}, "environment %q is not one of the suite's environments (%s)", s.Environment, list)
	}
	layered := false
	for _, name := range names {
		env := s.Environments[name]
		at := func(more ...cue.Selector) []cue.Selector {
			return append([]cue.Selector{str("environments"), str(name)}, more...)
		}
		n := 0
		for _, set := range []bool{env.Debian != nil, env.Dockerfile != nil, env.Image != nil} {
			if set {
				n++
			}
		}
		if n > 1 {
			c.add(at(), "environment %s sets %d of debian, dockerfile and image: it takes at most one", name, n)
		}
		if n > 0 {
			layered = true
		}
		if df := env.Dockerfile; df != nil {
			if dir, err := s.Resolve(df.Path); err != nil {
				c.add(at(str("dockerfile"), str("path")), "%v", err)
			} else if err := checkTree(dir, s.Root); err != nil {
				c.add(at(str("dockerfile"), str("path")), "%v", err)
			} else if fi, err := os.Lstat(filepath.Join(dir, "Dockerfile")); err != nil || !fi.Mode().IsRegular() {
				c.add(at(str("dockerfile"), str("path")), "folder %s holds no Dockerfile", df.Path)
			}
			if df.From != "" {
				if !known(df.From) {
					c.add(at(str("dockerfile"), str("from")), "environment %q is not one of the suite's environments (%s)", df.From, list)
				} else if loop := baseLoop(s, name); loop != "" {
					c.add(at(str("dockerfile"), str("from")), "environment %s is built from itself: %s", name, loop)
				}
			}
		}
	}
	kind := s.Agent.Kind
	if builtAgentKinds[kind] && !strings.HasPrefix(s.Agent.Image, "skillgate/"+kind+":") && layered && usesEnvironment(s) {
		c.add([]cue.Selector{str("agent"), str("image")}, "agent image %q is not one skillgate builds: an environment's cells get skillgate's %s CLI layered on the environment's image, so agent.image must be skillgate/%s:VERSION", s.Agent.Image, kind, kind)
	}
	dirs := map[string]error{}
	for _, id := range sortedKeys(s.Cases) {
		cs := s.Cases[id]
		at := func(more ...cue.Selector) []cue.Selector {
			return append([]cue.Selector{str("cases"), str(id)}, more...)
		}
		if cs.Environment != "" && !known(cs.Environment) {
			c.add(at(str("environment")), "environment %q is not one of the suite's environments (%s)", cs.Environment, list)
		}
		if cs.CaseDir != "" {
			err, seen := dirs[cs.CaseDir]
			if !seen {
				var dir string
				if dir, err = s.Resolve(cs.CaseDir); err == nil {
					err = checkTree(dir, s.Root)
				}
				dirs[cs.CaseDir] = err
			}
			if err != nil {
				c.add(at(str("caseDir")), "%v", err)
			}
		}
		if cs.Setup != nil && cs.Setup.Shell == "bash" && s.inSandbox(s.EnvironmentOf(cs)) {
			c.add(at(str("setup"), str("shell")), "%s", noBash)
		}
		for i, a := range cs.Assert {
			sel := at(str("assert"), cue.Index(i))
			if a.Run == nil && (a.Shell != "" || a.Environment != "") {
				c.add(sel, "shell and environment apply to run assertions only")
				continue
			}
			if a.Environment != "" && !known(a.Environment) {
				c.add(append(sel, str("environment")), "environment %q is not one of the suite's environments (%s)", a.Environment, list)
				continue
			}
			env := a.Environment
			if env == "" {
				env = s.EnvironmentOf(cs)
			}
			if a.Shell == "bash" && s.inSandbox(env) {
				c.add(append(sel, str("shell")), "%s", noBash)
			}
		}
	}
	if n, err := ParseBytes(s.Limits.CheckOutput); err == nil && n < 1<<10 {
		c.add([]cue.Selector{str("limits"), str("checkOutput")}, "limits.checkOutput is %s: at least 1k, so the 500 bytes a check's detail keeps are always read back", s.Limits.CheckOutput)
	}
}

// usesEnvironment reports whether a case or a run: check of the suite runs in a suite
// environment.
func usesEnvironment(s *Suite) bool {
	if s.Environment != "" {
		return true
	}
	for _, cs := range s.Cases {
		if cs.Environment != "" {
			return true
		}
		for _, a := range cs.Assert {
			if a.Environment != "" {
				return true
			}
		}
	}
	return false
}

// baseLoop follows the Dockerfile bases from environment name and returns the loop it
// finds, as "a → b → a", or "".
func baseLoop(s *Suite, name string) string {
	path := []string{name}
	seen := map[string]bool{name: true}
	for cur := name; ; {
		env, ok := s.Environments[cur]
		if !ok || env.Dockerfile == nil || env.Dockerfile.From == "" {
			return ""
		}
		cur = env.Dockerfile.From
		path = append(path, cur)
		if seen[cur] {
			if cur != name {
				return "" // a loop further on: reported at its own members
			}
			return strings.Join(path, " → ")
		}
		seen[cur] = true
	}
}

// EnvironmentOf is the environment a case's cells run in: its own, else the suite's
// default; "" for the agent's own image.
func (s *Suite) EnvironmentOf(cs Case) string {
	if cs.Environment != "" {
		return cs.Environment
	}
	return s.Environment
}

// noBash says why bash cannot run in skillgate's sandbox image.
const noBash = "shell bash: it would run in skillgate/sandbox, which has busybox sh only: use sh, or an environment (debian) that has bash"

// builtAgentKinds are the agent kinds whose CLI images skillgate builds (the kinds of
// runner/agent with a recipe).
var builtAgentKinds = map[string]bool{"claude-code": true, "codex": true, "opencode": true, "pi": true, "gemini": true}

// inSandbox reports whether what runs in environment env ("" for none) runs in skillgate's
// busybox sandbox: the command agent's default image, with no environment image over it.
func (s *Suite) inSandbox(env string) bool {
	if e, ok := s.Environments[env]; ok && (e.Debian != nil || e.Dockerfile != nil || e.Image != nil) {
		return false
	}
	if builtAgentKinds[s.Agent.Kind] {
		return false // their images have bash
	}
	return s.Agent.Image == "skillgate/sandbox" || s.Agent.Image == "skillgate/sandbox:latest"
}
