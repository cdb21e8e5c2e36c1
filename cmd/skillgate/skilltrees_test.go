package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"
)

// skillTrees is the filesystem proof of a mutate run's folder DIR: every
// stored cell's agent listed each file of its skills folder with its
// sha256 ("tree HEX  ./NAME/PATH" lines of its answer), and that listing
// must be exactly the trees of the skills its arm installs: a mutant's
// cell sees its mutant's tree and nothing else, and the skill's own arm
// never a byte that is only in a mutant. Each mutant's folder in DIR is
// hashed again and must be the tree the plan recorded.
func skillTrees(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: skilltrees DIR")
	}
	dir := ts.MkAbs(args[0])
	p, err := plan.ReadPlan(filepath.Join(dir, store.FilePlan))
	ts.Check(err)
	// Bytes only a mutant has: in a mutant's tree, in no skill's.
	own, mutantOnly := map[string]bool{}, map[string]string{}
	mutantArm := map[string]bool{}
	for _, m := range p.Mutants {
		mutantArm[m.Arm] = true
		key := m.Skill + "." + m.Mutant
		t, err := plan.HashTree(filepath.Join(dir, "mutants", m.Skill, m.Mutant))
		ts.Check(err)
		if t.Digest != p.Skills[key].Digest {
			ts.Fatalf("mutant %s: its folder hashes to %s, the plan ran %s", key, t.Digest, p.Skills[key].Digest)
		}
	}
	for key, sk := range p.Skills {
		for _, e := range sk.Files {
			if strings.Contains(key, ".") {
				mutantOnly[string(e.Digest)] = key
			} else {
				own[string(e.Digest)] = true
			}
		}
	}
	for d := range own {
		delete(mutantOnly, d)
	}
	arms := map[string]plan.PlanArm{}
	for _, a := range p.Arms {
		arms[a.Name] = a
	}
	st := &store.Store{Dir: dir}
	checked, mutants := 0, 0
	for _, c := range p.Cells {
		ro, ok, err := st.Rollout(c.Rollout)
		ts.Check(err)
		if !ok {
			continue // not needed: sequential stopping never ran it
		}
		want := map[string]string{}
		for _, key := range arms[c.Arm].Skills {
			sk := p.Skills[key]
			for path, e := range sk.Files {
				want["./"+sk.Name+"/"+path] = string(e.Digest)
			}
		}
		saw := listedTree(ro.Answer)
		if !maps.Equal(saw, want) {
			ts.Fatalf("cell %s saw a skills folder other than its arm's:\nsaw  %v\nwant %v", c.ID, saw, want)
		}
		for _, in := range ro.Inputs.Skills {
			if in.Digest != p.Skills[in.Key].Digest {
				ts.Fatalf("cell %s ran skill %s as %s, the plan says %s", c.ID, in.Key, in.Digest, p.Skills[in.Key].Digest)
			}
		}
		if mutantArm[c.Arm] {
			mutants++
		} else {
			for path, d := range saw {
				if m, ok := mutantOnly[d]; ok {
					ts.Fatalf("cell %s of the skill's own arm saw %s with the bytes of mutant %s", c.ID, path, m)
				}
			}
		}
		checked++
	}
	if mutants == 0 {
		ts.Fatalf("no stored mutant cell in %s", dir)
	}
	fmt.Fprintf(ts.Stdout(), "%d cells checked (%d of mutant arms): each saw exactly its arm's skill trees\n", checked, mutants)
}

// listedTree reads the "tree HEX  PATH" lines of an answer into digests
// by path.
func listedTree(answer string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(answer, "\n") {
		rest, ok := strings.CutPrefix(line, "tree ")
		if !ok {
			continue
		}
		hex, path, ok := strings.Cut(rest, "  ")
		if ok {
			out[path] = "sha256:" + hex
		}
	}
	return out
}
