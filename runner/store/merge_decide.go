package store

// Merge, phase 4 (decide): one version of every key is chosen, by the
// rules the merge record names; what derives from a rollout follows it.

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
)

// Rules a merge decides by, as the merge record says them.
const (
	ruleValid  = "a valid record over an invalid one"
	ruleFirst  = "the rollout that started first"
	ruleDigest = "the lowest content digest"
	// RuleCalibration: a calibration rollout goes with the calibration
	// chosen, which read it.
	RuleCalibration      = "follows the chosen calibration"
	ruleCalibrationFirst = "the calibration that started first"
	ruleFollows          = "follows rollout %s, whose version it was not made from"
)

// decide chooses one version of every key: calibration and reuse
// sentinels first, whose rollouts go with them; then rollouts; then what
// derives from them.
func (m *merger) decide() error {
	m.pinned = map[digest.Digest]mergePin{}
	var cands []int
	for i, in := range m.inputs {
		if in.calibration != nil {
			cands = append(cands, i)
		}
	}
	if len(cands) > 0 {
		calStart := func(i int) time.Time {
			var t time.Time
			for _, k := range m.inputs[i].calChecks {
				if s := m.inputs[i].started[k]; t.IsZero() || s.Before(t) {
					t = s
				}
			}
			return t
		}
		// One version per input: its calibration.json with the versions
		// of the rollouts it read, which go with it.
		versions := map[digest.Digest]*mergeVersion{}
		var order []*mergeVersion
		for _, i := range cands {
			in := m.inputs[i]
			var group bytes.Buffer
			group.Write(in.calibration)
			for _, r := range in.calChecks {
				fmt.Fprintf(&group, "\n%s %s", r, in.held[r])
			}
			d := digest.FromBytes(group.Bytes())
			if v := versions[d]; v != nil {
				v.inputs = append(v.inputs, i)
				continue
			}
			v := &mergeVersion{inputs: []int{i}, digest: d, valid: true, started: calStart(i), src: filepath.Join(in.abs, FileCalibration)}
			versions[d] = v
			order = append(order, v)
		}
		k := &mergeKey{kind: KindCalibration, key: FileCalibration, versions: order, asideWhy: map[*mergeVersion]string{}}
		choose(k, true)
		if k.rule == ruleFirst {
			k.rule = ruleCalibrationFirst
		}
		m.records["calibration"] = k
		chosen := m.inputs[k.chosen.inputs[0]]
		m.calibration = chosen.calibration
		for _, r := range chosen.calChecks {
			m.pinned[r] = mergePin{chosen.held[r], RuleCalibration}
		}
	}
	m.decideSentinels()
	for _, kind := range []string{KindTree, KindExchangeBody, KindExchangeLog} {
		for _, k := range m.sorted(kind) {
			choose(k, false) // one version: its bytes give its key
		}
	}
	winner := map[digest.Digest]digest.Digest{}
	for _, k := range m.sorted(KindRollout) {
		rk := digest.NewDigestFromEncoded(digest.SHA256, k.key)
		if pin, ok := m.pinned[rk]; ok && len(k.versions) > 1 {
			for _, v := range k.versions {
				if v.digest == pin.digest {
					k.chosen = v
				} else {
					k.aside = append(k.aside, v)
				}
			}
			k.rule = pin.rule
		} else {
			choose(k, true)
		}
		winner[rk] = k.chosen.digest
	}
	for _, kind := range []string{KindGrade, KindPacket, KindJudgement, KindJudgeFailure} {
		for _, k := range m.sorted(kind) {
			var eligible []*mergeVersion
			for _, v := range k.versions {
				if why := m.stale(v, winner); why != "" {
					k.aside = append(k.aside, v)
					k.asideWhy[v] = why
					continue
				}
				eligible = append(eligible, v)
			}
			followed := len(k.aside) > 0
			aside := k.aside
			k.versions, k.aside = eligible, nil
			if len(eligible) > 0 {
				choose(k, false)
			}
			k.aside = append(k.aside, aside...)
			if followed && k.rule == "" {
				k.rule = k.asideWhy[aside[0]]
			}
		}
	}
	// A judgement stored clears the failures of its key, as a run does.
	for _, k := range m.sorted(KindJudgeFailure) {
		if j := m.records[KindJudgement+" "+k.key]; j != nil && j.chosen != nil {
			k.chosen, k.aside = nil, nil
		}
	}
	return nil
}

// stale says why version v derives from a rollout version other than the
// chosen one ("" when it does not): every input holding it holds another
// version of a rollout it was made from.
func (m *merger) stale(v *mergeVersion, winner map[digest.Digest]digest.Digest) string {
	for _, d := range v.deps {
		w, ok := winner[d]
		if !ok {
			continue
		}
		fresh := false
		for _, i := range v.inputs {
			if h, held := m.inputs[i].held[d]; !held || h == w {
				fresh = true
			}
		}
		if !fresh {
			return fmt.Sprintf(ruleFollows, short(d.Encoded()))
		}
	}
	return ""
}

// choose picks k's version by the rules, in order: a valid one over an
// invalid one; for rollouts, the one that started first; the lowest
// content digest. The rule is the first that told the chosen one from the
// next.
func choose(k *mergeKey, byStart bool) {
	if len(k.versions) == 1 {
		k.chosen = k.versions[0]
		return
	}
	vs := slices.Clone(k.versions)
	rule := func(a, b *mergeVersion) (int, string) {
		if a.valid != b.valid {
			if a.valid {
				return -1, ruleValid
			}
			return 1, ruleValid
		}
		if byStart && !a.started.Equal(b.started) {
			return a.started.Compare(b.started), ruleFirst
		}
		return strings.Compare(a.digest.String(), b.digest.String()), ruleDigest
	}
	slices.SortFunc(vs, func(a, b *mergeVersion) int { d, _ := rule(a, b); return d })
	k.chosen = vs[0]
	_, k.rule = rule(vs[0], vs[1])
	k.aside = append(k.aside, vs[1:]...)
}

// sorted is every key of kind, by key.
func (m *merger) sorted(kind string) []*mergeKey {
	var out []*mergeKey
	for _, k := range m.records {
		if k.kind == kind {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b *mergeKey) int { return strings.Compare(a.key, b.key) })
	return out
}
