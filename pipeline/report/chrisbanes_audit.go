package report

// chrisbanes/skills' audit-queue.json.

import (
	"math"
	"math/rand/v2"
	"slices"
)

// ChrisbanesAuditQueue is their audit queue: every cell whose deterministic
// and judge outcomes disagree, every cell of a case × arm whose judge
// outcomes differ, then a seeded sample of samplePercent of the others
// (rounded up), by ID, each with a null decision.
func ChrisbanesAuditQueue(records []map[string]any, seed int64, samplePercent int) []any {
	reasons := map[string][]string{}
	add := func(id, why string) {
		if !slices.Contains(reasons[id], why) {
			reasons[id] = append(reasons[id], why)
		}
	}
	type condition struct{ c, a string }
	judged := map[condition][]map[string]any{}
	var order []condition
	for _, rec := range records {
		if rec["objective_pass"] != rec["judge_pass"] {
			add(rec["id"].(string), "judge-objective-disagreement")
		}
		k := condition{rec["case_id"].(string), rec["arm"].(string)}
		if _, ok := judged[k]; !ok {
			order = append(order, k)
		}
		judged[k] = append(judged[k], rec)
	}
	for _, k := range order {
		outcomes := map[bool]bool{}
		for _, rec := range judged[k] {
			outcomes[rec["judge_pass"].(bool)] = true
		}
		if len(outcomes) > 1 {
			for _, rec := range judged[k] {
				add(rec["id"].(string), "within-condition-inconsistency")
			}
		}
	}
	var remaining []map[string]any
	for _, rec := range records {
		if _, ok := reasons[rec["id"].(string)]; !ok {
			remaining = append(remaining, rec)
		}
	}
	n := int(math.Ceil(float64(len(remaining)) * float64(samplePercent) / 100))
	// The suite's seed picks the sample, so a report rebuilt from the same
	// results queues the same cells; the stream constant only keeps this
	// sample apart from skillgate's own audit sample of the same seed.
	rng := rand.New(rand.NewPCG(uint64(seed), 0x63686272697362))
	for _, i := range rng.Perm(len(remaining))[:n] {
		add(remaining[i]["id"].(string), "seeded-sample")
	}
	byID := map[string]map[string]any{}
	for _, rec := range records {
		byID[rec["id"].(string)] = rec
	}
	out := []any{}
	for _, id := range slices.Sorted(cbKeys(reasons)) {
		why := reasons[id]
		slices.Sort(why)
		rec := byID[id]
		out = append(out, map[string]any{
			"id": id, "case_id": rec["case_id"], "arm": rec["arm"], "repetition": rec["repetition"],
			"reasons": cbStrings(why), "decision": nil,
		})
	}
	return out
}
