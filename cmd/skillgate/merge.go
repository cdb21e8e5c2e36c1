package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/runner"
)

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "union the run folders of a plan's shards into one, and report it",
		ArgsUsage: "OUT SHARD...",
		Description: `Merges run folders of one plan, such as those of "skillgate run --shard I/N"
on N machines, into the new run folder OUT (absent or empty), then writes its
verdict and reports as "skillgate report" does. No Docker, no model.

Every record is verified against its key before it is taken: a rollout's
record names its key, its changed files are stored under their contents'
digests and, under a key of the plan, it ran the plan's trees; a tree
snapshot's files give its digest; a grade or judgement is of the cells its
key names; the ledgers parse. A folder of another plan, or a record that
fails, stops the merge before OUT is written, naming what failed.

A key stored with different content in two folders keeps both: one is chosen
(a valid record over an invalid one, then the rollout that started first,
then the lowest content digest; whatever derives from a rollout follows the
version it was made from; the calibration's rollouts follow the chosen
calibration), the others are kept under OUT/merge/set-aside, and
OUT/merge.json lists them. The spend and audit ledgers are the union of
the folders' lines. The ledger of reused rollouts (reused.json) is carried
for the rollouts taken: each entry checked against its folder (a key and a
cell of the plan, the very rollout the folder holds), kept when its folder's
version is the one chosen, once per key.

With every shard merged, OUT is the plan's run folder: its reports are those
of one unsharded run of the plan with the same stored results. With shards
missing it says INCOMPLETE and which shards it holds.

Exits with the verdict's code: 0 PASS, 1 FAIL, 2 INCOMPLETE, 3 calibration
failed; 2 when it refuses.`,
		Action: func(c *cli.Context) error {
			if c.NArg() < 2 {
				return exit(2, fmt.Errorf("merge run folders: want the new run folder OUT and at least one run folder to merge, as in skillgate merge OUT SHARD..."))
			}
			out, dirs := c.Args().First(), c.Args().Tail()
			rec, err := store.Merge(out, dirs)
			if err != nil {
				return exit(2, err)
			}
			fmt.Fprint(os.Stderr, describeMerge(rec, out))
			r, err := runner.Report(out)
			if err != nil {
				return exit(2, err)
			}
			fmt.Fprint(os.Stderr, describeVerdict(r, out))
			return exitVerdict(r)
		},
	}
}

// describeMerge says what a merge took and decided, for people.
func describeMerge(rec *store.MergeRecord, out string) string {
	var b strings.Builder
	var counts []string
	for _, k := range []struct{ kind, name string }{
		{store.KindRollout, "rollouts"}, {store.KindGrade, "grades"}, {store.KindJudgement, "judgements"},
		{store.KindPacket, "packets"}, {store.KindTree, "trees"},
	} {
		counts = append(counts, fmt.Sprintf("%d %s", rec.Records[k.kind], k.name))
	}
	if rec.Spend > 0 {
		counts = append(counts, fmt.Sprintf("%d spend entries", rec.Spend))
	}
	if rec.Reused > 0 {
		counts = append(counts, fmt.Sprintf("%d reused cells (reused.json)", rec.Reused))
	}
	if n := rec.Records[store.KindReuseSentinels]; n > 0 {
		groups := "groups"
		if n == 1 {
			groups = "group"
		}
		counts = append(counts, fmt.Sprintf("%d reuse sentinel %s (reuse-sentinels.json)", n, groups))
	}
	fmt.Fprintf(&b, "merged %d run folders of plan %s into %s: %s\n", len(rec.Inputs), rec.Plan, out, strings.Join(counts, ", "))
	calibrated, sentinels := 0, 0
	for _, d := range rec.Duplicates {
		if d.Kind == store.KindRollout && d.Rule == store.RuleCalibration {
			calibrated++ // said once, with the calibration
			continue
		}
		if d.Kind == store.KindRollout && d.Rule == store.RuleSentinels {
			sentinels++ // said once, with the sentinels
			continue
		}
		chosen := "none"
		if len(d.Chosen.Inputs) > 0 {
			chosen = inputNames(rec, d.Chosen.Inputs) + "'s"
		}
		var aside []string
		for _, v := range d.SetAside {
			aside = append(aside, inputNames(rec, v.Inputs)+"'s in "+v.Path)
		}
		if d.Kind == store.KindCalibration {
			fmt.Fprintf(&b, "  calibration: run into several folders; chose %s (%s), with its rollouts; kept %s\n", chosen, d.Rule, strings.Join(aside, ", "))
			continue
		}
		if d.Kind == store.KindReuseSentinels {
			fmt.Fprintf(&b, "  reuse sentinels for %s: run into several folders; chose %s (%s), with its sentinels' rollouts; kept %s\n", d.Key, chosen, d.Rule, strings.Join(aside, ", "))
			continue
		}
		fmt.Fprintf(&b, "  %s %s: stored with different content; chose %s (%s); kept %s\n", d.Kind, shortKey(d.Key), chosen, d.Rule, strings.Join(aside, ", "))
	}
	if calibrated > 0 {
		fmt.Fprintf(&b, "  %d calibration rollouts follow the chosen calibration; the others are kept under %s/%s\n", calibrated, store.DirSetAside, store.KindRollout)
	}
	if sentinels > 0 {
		fmt.Fprintf(&b, "  %d sentinel rollouts follow the chosen reuse sentinels; the others are kept under %s/%s\n", sentinels, store.DirSetAside, store.KindRollout)
	}
	if s := rec.Shard; s != nil {
		var missing []string
		for i := 1; i <= s.Count; i++ {
			if !slices.Contains(s.Shards, i) {
				missing = append(missing, strconv.Itoa(i))
			}
		}
		fmt.Fprintf(&b, "shards %s of %d are missing: the verdict is INCOMPLETE until they are merged too\n", strings.Join(missing, ", "), s.Count)
	}
	for _, n := range rec.NotMerged {
		fmt.Fprintf(&b, "not merged: %s\n", n)
	}
	return b.String()
}

func inputNames(rec *store.MergeRecord, inputs []int) string {
	var names []string
	for _, i := range inputs {
		names = append(names, rec.Inputs[i].Dir)
	}
	return strings.Join(names, ", ")
}

func shortKey(k string) string {
	if len(k) > 12 {
		return k[:12]
	}
	return k
}
