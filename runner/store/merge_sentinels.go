package store

// Merge: run --reuse's drift sentinels (reuse-sentinels.json) are carried
// as the calibration is. Each group, an agent and model, is checked against
// the folder that lists it, as the records are: its agent is one of the
// plan's, each of its cells a cell of the plan of that agent, each sentinel
// that cell's sentinel (plan.SentinelCell), every sentinel graded a rollout
// the folder holds, and its counts those of its cells. Each folder's group
// with the versions of the sentinel rollouts it holds is one version of the
// group; the chosen one (its sentinels started first, then the lowest
// digest) brings those rollouts with it, the others are set aside. Every
// group found is carried, one per agent and model.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/runfolder"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// FileReuseSentinels is run --reuse's record of its drift sentinels.
const FileReuseSentinels = runfolder.FileReuseSentinels

// KindReuseSentinels is a group of reuse-sentinels.json, as the merge
// record names it; its key names the group's agent and model.
const KindReuseSentinels = "reuse-sentinels"

// RuleSentinels: a sentinel rollout goes with the reuse sentinels chosen,
// which graded it.
const (
	RuleSentinels      = "follows the chosen reuse sentinels"
	ruleSentinelsFirst = "the reuse sentinels that started first"
)

// sentinelsKey names a group in the merge: its agent and model (as the
// group's line says a group of no model).
func sentinelsKey(g verdict.SentinelGroup) string {
	model := g.Model
	if model == "" {
		model = "(none asked)"
	}
	return "agent " + g.Agent + ", model " + model
}

// inputSentinels is what an input's reuse-sentinels.json holds, verified.
type inputSentinels struct {
	digest digest.Digest // of the file's bytes, as verified
	groups map[string]verdict.SentinelGroup
	// keys are the sentinel rollouts each group names that the input
	// holds, by group.
	keys map[string][]digest.Digest
}

// scanSentinels reads and checks input i's reuse-sentinels.json.
func (m *merger) scanSentinels(i int) error {
	in := m.inputs[i]
	b, err := readRegular(filepath.Join(in.abs, FileReuseSentinels))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("verify %s: %w", in.dir, err)
	}
	var rec verdict.ReuseSentinels
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("verify %s: %s: %w: altered or damaged", in.dir, FileReuseSentinels, err)
	}
	s := &inputSentinels{digest: digest.FromBytes(b), groups: map[string]verdict.SentinelGroup{}, keys: map[string][]digest.Digest{}}
	for n, g := range rec.Groups {
		k := sentinelsKey(g)
		keys, err := m.checkSentinels(in, g)
		if _, twice := s.groups[k]; err == nil && twice {
			err = errors.New("listed twice")
		}
		if err != nil {
			return fmt.Errorf("verify %s: %s group %d (%s): %w: altered or damaged", in.dir, FileReuseSentinels, n+1, k, err)
		}
		s.groups[k], s.keys[k] = g, keys
	}
	in.sentinels = s
	return nil
}

// checkSentinels checks one group against the plan and the folder, and
// returns the sentinel rollouts it names that the folder holds.
func (m *merger) checkSentinels(in *mergeInput, g verdict.SentinelGroup) ([]digest.Digest, error) {
	several := len(m.plan.Agents) > 0
	switch {
	case !slices.Contains(sentinelAgents(m.plan), g.Agent):
		return nil, fmt.Errorf("agent %q is not the plan's", g.Agent)
	case g.Decision != verdict.SentinelsKept && g.Decision != verdict.SentinelsRefused && g.Decision != verdict.SentinelsOff:
		return nil, fmt.Errorf("decision %q", g.Decision)
	case g.Decision == verdict.SentinelsOff && len(g.Cells) > 0:
		return nil, fmt.Errorf("off, yet %d sentinels ran", len(g.Cells))
	}
	var keys []digest.Digest
	paired, stored, fresh := 0, 0, 0
	for _, pair := range g.Cells {
		c, ok := m.ix.cells[pair.Cell]
		switch {
		case !ok:
			return nil, fmt.Errorf("cell %s is no cell of the plan", pair.Cell)
		case several && c.Agent != g.Agent:
			return nil, fmt.Errorf("cell %s is agent %s's", pair.Cell, c.Agent)
		}
		s := plan.SentinelCell(c)
		if pair.Sentinel != s.ID {
			return nil, fmt.Errorf("sentinel %s is not cell %s's (%s)", pair.Sentinel, c.ID, s.ID)
		}
		if _, held := in.held[s.Rollout]; held {
			keys = append(keys, s.Rollout)
		} else if pair.Fresh != nil {
			return nil, fmt.Errorf("sentinel %s is graded, and the folder holds no rollout of it (%s)", s.ID, short(s.Rollout.Encoded()))
		}
		if pair.Stored != nil && pair.Fresh != nil {
			paired++
			stored += b2i(*pair.Stored)
			fresh += b2i(*pair.Fresh)
		}
	}
	if paired != g.Paired || stored != g.StoredPassed || fresh != g.FreshPassed {
		return nil, fmt.Errorf("it counts %d paired, %d and %d passed; its sentinels give %d, %d and %d", g.Paired, g.StoredPassed, g.FreshPassed, paired, stored, fresh)
	}
	return keys, nil
}

// sentinelAgents are the names the plan's agents have in sentinel groups:
// each agent's name in a plan on several, else the agent's name or kind.
func sentinelAgents(p *plan.Plan) []string {
	if len(p.Agents) > 0 {
		return p.AgentNames()
	}
	if p.Agent.Name != "" {
		return []string{p.Agent.Name}
	}
	return []string{p.Agent.Kind}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// decideSentinels chooses one version of each group and pins the sentinel
// rollouts the chosen one names to its folder's versions.
func (m *merger) decideSentinels() {
	for i, in := range m.inputs {
		if in.sentinels == nil {
			continue
		}
		for k, g := range in.sentinels.groups {
			b, _ := json.Marshal(g)
			var start time.Time
			for _, r := range in.sentinels.keys[k] {
				b = fmt.Appendf(b, "\n%s %s", r, in.held[r])
				if s := in.started[r]; start.IsZero() || s.Before(start) {
					start = s
				}
			}
			m.add(KindReuseSentinels, k, i, &mergeVersion{digest: digest.FromBytes(b), valid: true, started: start, src: FileReuseSentinels})
		}
	}
	for _, k := range m.sorted(KindReuseSentinels) {
		choose(k, true)
		if k.rule == ruleFirst {
			k.rule = ruleSentinelsFirst
		}
		in := m.inputs[k.chosen.inputs[0]]
		for _, r := range in.sentinels.keys[k.key] {
			m.pinned[r] = mergePin{in.held[r], RuleSentinels}
		}
	}
}

// writeSentinels writes the merged folder's reuse-sentinels.json into tmp,
// each group the chosen version, and sets the others aside. Each folder's
// file must still be the one verified.
func (m *merger) writeSentinels(tmp string) error {
	keys := m.sorted(KindReuseSentinels)
	if len(keys) == 0 {
		return nil
	}
	group := func(v *mergeVersion, key string) (verdict.SentinelGroup, error) {
		in := m.inputs[v.inputs[0]]
		b, err := readRegular(filepath.Join(in.abs, FileReuseSentinels))
		if err == nil && digest.FromBytes(b) != in.sentinels.digest {
			err = fmt.Errorf("%s changed while it was merged", filepath.Join(in.abs, FileReuseSentinels))
		}
		return in.sentinels.groups[key], err
	}
	encode := func(groups []verdict.SentinelGroup) []byte {
		slices.SortFunc(groups, func(a, b verdict.SentinelGroup) int {
			if c := strings.Compare(a.Agent, b.Agent); c != 0 {
				return c
			}
			return strings.Compare(a.Model, b.Model)
		})
		b, _ := json.MarshalIndent(verdict.ReuseSentinels{Groups: groups}, "", "  ")
		return append(b, '\n')
	}
	put := func(rel string, b []byte) error {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, rel), b, 0o644)
	}
	var chosen []verdict.SentinelGroup
	for _, k := range keys {
		g, err := group(k.chosen, k.key)
		if err != nil {
			return fmt.Errorf("write merged run folder: %s %s: %w", KindReuseSentinels, k.key, err)
		}
		chosen = append(chosen, g)
		if len(k.aside) == 0 {
			continue
		}
		dup := MergeDuplicate{Kind: KindReuseSentinels, Key: k.key, Rule: k.rule, SetAside: []MergeVersion{},
			Chosen: MergeVersion{Inputs: k.chosen.inputs, Digest: k.chosen.digest}}
		for _, v := range k.aside {
			g, err := group(v, k.key)
			rel := filepath.Join(DirSetAside, KindReuseSentinels, digest.FromString(k.key).Encoded()[:16], v.digest.Encoded()[:16], FileReuseSentinels)
			if err == nil {
				err = put(rel, encode([]verdict.SentinelGroup{g}))
			}
			if err != nil {
				return fmt.Errorf("write merged run folder: %s %s: %w", KindReuseSentinels, k.key, err)
			}
			dup.SetAside = append(dup.SetAside, MergeVersion{Inputs: v.inputs, Digest: v.digest, Path: filepath.ToSlash(rel)})
		}
		m.rec.Duplicates = append(m.rec.Duplicates, dup)
	}
	if err := put(FileReuseSentinels, encode(chosen)); err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	m.rec.Records[KindReuseSentinels] = len(chosen)
	return nil
}
