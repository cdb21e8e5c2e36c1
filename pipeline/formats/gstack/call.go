package gstack

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Arm is one arm of a skill-eval call: a skill folder (SKILL.md plus what
// it reads), or none.
type Arm struct {
	Name string
	// Dir is the skill folder, absolute; "" for none.
	Dir string
}

// ParseArms reads --arms: NAME=DIR for a skill folder (which may be
// anywhere: the caller names it) and none for no skill, comma-separated.
func ParseArms(s string) ([]Arm, error) {
	var arms []Arm
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, dir, hasDir := strings.Cut(part, "=")
		switch {
		case part == "":
			return nil, fmt.Errorf("parse --arms %q: an empty arm", s)
		case !hasDir && name != "none":
			return nil, fmt.Errorf("parse --arms %q: arm %q has no skill folder: write %s=DIR, or none for the arm without a skill", s, name, name)
		case hasDir && dir == "":
			return nil, fmt.Errorf("parse --arms %q: arm %q names no folder", s, name)
		case !validName(name):
			return nil, fmt.Errorf("parse --arms %q: arm name %q: use lower case letters, digits, '.', '_' and '-'", s, name)
		case seen[name]:
			return nil, fmt.Errorf("parse --arms %q: arm %q named twice", s, name)
		}
		seen[name] = true
		a := Arm{Name: name}
		if hasDir {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return nil, fmt.Errorf("parse --arms: arm %s: %w", name, err)
			}
			if _, err := os.Stat(filepath.Join(abs, "SKILL.md")); err != nil {
				return nil, fmt.Errorf("parse --arms: arm %s: %s is not a skill folder: %w", name, dir, err)
			}
			a.Dir = abs
		}
		arms = append(arms, a)
	}
	return arms, nil
}

func validName(s string) bool {
	return s != "" && suiteName(s) == s && s[0] != '.' && s[0] != '_' && s[0] != '-'
}

// Call is a skill-eval call: the suite it runs is built in memory from it
// (Source) through the CUE package's #Call, so the tasks are read exactly
// as a suite that names tasks.json reads them.
type Call struct {
	// Tasks is the tasks file, absolute.
	Tasks string
	Arms  []Arm
	// Host is --host: claude or codex.
	Host  string
	Model string
	// Trials is --trials; 0 leaves the schema's.
	Trials int
	// Script, when not nil, is the scripted model (schema #Script, as
	// JSON) that answers instead of a provider, with StandIn saying so:
	// offline, for tests and demos.
	Script  json.RawMessage
	StandIn string
	// JudgeModel is --judge-model: the model that grades the sidecar's
	// judge lines; "" leaves the schema's, the host's model.
	JudgeModel string
	// Judge, with Script, is the scripted suite's judge (schema #Judge, as
	// JSON): a stand-in call's judge lines are graded by it.
	Judge json.RawMessage
}

// Dir is the folder the call's suite is loaded as if it were in: beside
// the tasks file, never on disk, so the suite's relative paths resolve and
// no file of the user's is read as part of it.
func (c Call) Dir() string {
	return filepath.Join(filepath.Dir(c.Tasks), ".skill-eval")
}

// Root is the folder every path of the call's suite stays in: the nearest
// folder holding the tasks file and every arm's skill folder, which the
// caller named.
func (c Call) Root() string {
	root := filepath.Dir(c.Tasks)
	for _, a := range c.Arms {
		if a.Dir == "" {
			continue
		}
		for !within(a.Dir, root) {
			root = filepath.Dir(root)
		}
	}
	return root
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Source is the call's suite, as CUE: the tasks file named (skillgate
// reads it and the files beside it), each arm's skill installed under the
// skill's own name, the host's agent asking for the model.
func (c Call) Source() ([]byte, error) {
	if c.Host != "claude" && c.Host != "codex" {
		return nil, fmt.Errorf("build skill-eval suite: --host %q: want claude or codex", c.Host)
	}
	skill := ""
	for _, a := range c.Arms {
		if a.Dir != "" {
			skill = skillName(a.Dir)
			break
		}
	}
	name := suiteName(filepath.Base(filepath.Dir(c.Tasks)))
	if skill == "" {
		skill = name
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "package skilleval\n\nimport \"skillgate.dev/schema/formats/gstack\"\n\n")
	fmt.Fprintf(&b, "gstack.#Call & {\n\t#host: %q\n\tname: %q\n", c.Host, name)
	fmt.Fprintf(&b, "\tformats: gstack: file: %q\n", "../"+filepath.Base(c.Tasks))
	fmt.Fprintf(&b, "\tagent: model: %q\n", c.Model)
	if c.Trials > 0 {
		fmt.Fprintf(&b, "\ttrials: %d\n", c.Trials)
	}
	for _, a := range c.Arms {
		if a.Dir == "" {
			fmt.Fprintf(&b, "\tarms: %q: skills: []\n", a.Name)
			continue
		}
		rel, err := filepath.Rel(c.Dir(), a.Dir)
		if err != nil {
			return nil, fmt.Errorf("build skill-eval suite: arm %s: %w", a.Name, err)
		}
		fmt.Fprintf(&b, "\tskills: %q: {path: %q, name: %q}\n", a.Name, filepath.ToSlash(rel), skill)
		fmt.Fprintf(&b, "\tarms: %q: skills: [%q]\n", a.Name, a.Name)
	}
	if c.JudgeModel != "" {
		fmt.Fprintf(&b, "\t#judgeModel: %q\n", c.JudgeModel)
	}
	if c.Script != nil {
		fmt.Fprintf(&b, "\t#priced: false\n\tagent: {provider: \"scripted\", prices: perCall: 0, standIn: %s, script: %s}\n", strconv.Quote(c.StandIn), c.Script)
		if c.Judge != nil {
			fmt.Fprintf(&b, "\tjudge: %s\n", c.Judge)
		}
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// skillName is the name a skill folder's SKILL.md gives in its front
// matter, else the folder's, as a skillgate name: every arm installs its
// copy under it, so each arm's agent sees the same skill.
func skillName(dir string) string {
	name := filepath.Base(dir)
	if b, err := os.ReadFile(filepath.Join(dir, "SKILL.md")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		if sc.Scan() && strings.TrimSpace(sc.Text()) == "---" {
			for sc.Scan() && strings.TrimSpace(sc.Text()) != "---" {
				if v, ok := strings.CutPrefix(sc.Text(), "name:"); ok {
					if v = strings.Trim(strings.TrimSpace(v), `"'`); v != "" {
						name = v
					}
				}
			}
		}
	}
	return suiteName(name)
}
