package grade

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/pipeline/suite"
)

// This file reads the judge's replies and combines pairwise judgements.

// ParseRubricReply reads a rubric judge's reply: {"criteria": [{"criterion":
// i, "pass": bool, "evidence": "..."}]} with exactly one result for each of
// the n criteria (0 to n-1). A reply wrapped in a code fence or in prose is
// read from its outermost braces. A missing, duplicate, extra or malformed
// result makes the whole reply invalid: the error says why.
func ParseRubricReply(reply string, n int) ([]CriterionResult, error) {
	var r struct {
		Criteria *[]json.RawMessage `json:"criteria"`
	}
	if err := decodeReply(reply, &r); err != nil {
		return nil, err
	}
	if r.Criteria == nil {
		return nil, errors.New(`the reply has no "criteria" list`)
	}
	out := make([]CriterionResult, n)
	seen := make([]int, n)
	var problems []string
	for k, raw := range *r.Criteria {
		var item struct {
			Criterion json.RawMessage `json:"criterion"`
			Pass      *bool           `json:"pass"`
			Evidence  *string         `json:"evidence"`
		}
		if err := json.Unmarshal(raw, &item); err != nil {
			problems = append(problems, fmt.Sprintf("result %d is malformed: %v", k, err))
			continue
		}
		if item.Criterion == nil {
			problems = append(problems, fmt.Sprintf("result %d names no criterion", k))
			continue
		}
		idx, err := strconv.ParseInt(string(item.Criterion), 10, 64)
		if err != nil {
			problems = append(problems, fmt.Sprintf("result %d: criterion %s is not an index", k, item.Criterion))
			continue
		}
		if idx < 0 || idx >= int64(n) {
			problems = append(problems, fmt.Sprintf("result %d: criterion %d is not a criterion (0 to %d)", k, idx, n-1))
			continue
		}
		if item.Pass == nil {
			problems = append(problems, fmt.Sprintf("result %d: criterion %d has no boolean pass", k, idx))
			continue
		}
		seen[idx]++
		out[idx] = CriterionResult{Criterion: int(idx), Pass: *item.Pass}
		if item.Evidence != nil {
			out[idx].Evidence = *item.Evidence
		}
	}
	for i, c := range seen {
		switch {
		case c == 0:
			problems = append(problems, fmt.Sprintf("criterion %d has no result", i))
		case c > 1:
			problems = append(problems, fmt.Sprintf("criterion %d has %d results", i, c))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}

// ParsePairwiseReply reads a pairwise judge's reply: {"winner": "A" | "B" |
// "tie", "evidence": "..."}; the winner is A, B or tie.
func ParsePairwiseReply(reply string) (winner, evidence string, err error) {
	var r struct {
		Winner   *string `json:"winner"`
		Evidence string  `json:"evidence"`
	}
	if err := decodeReply(reply, &r); err != nil {
		return "", "", err
	}
	if r.Winner == nil {
		return "", "", errors.New(`the reply has no "winner"`)
	}
	switch w := strings.TrimSpace(*r.Winner); {
	case strings.EqualFold(w, "A"):
		return PositionA, r.Evidence, nil
	case strings.EqualFold(w, "B"):
		return PositionB, r.Evidence, nil
	case strings.EqualFold(w, "tie"):
		return "tie", r.Evidence, nil
	default:
		return "", "", fmt.Errorf("winner %q is not A, B or tie", w)
	}
}

// decodeReply decodes the JSON object of a reply: the reply itself, or the
// text between its first '{' and its last '}'.
func decodeReply(reply string, v any) error {
	s := strings.TrimSpace(reply)
	if !strings.HasPrefix(s, "{") {
		i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
		if i < 0 || j < i {
			return fmt.Errorf("the reply holds no JSON object: %q", clip(reply, 200))
		}
		s = s[i : j+1]
	} else if j := strings.LastIndexByte(s, '}'); j >= 0 {
		s = s[:j+1]
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("the reply is not the JSON asked for: %v", err)
	}
	return nil
}

func clip(s string, n int) string {
	c, cut := capText(s, n)
	if cut {
		return c + "..."
	}
	return c
}

// PairwiseOutcome is the candidate's outcome when the judge named winner
// (A, B or tie) and the candidate was shown at candidatePos.
func PairwiseOutcome(winner, candidatePos string) string {
	switch winner {
	case candidatePos:
		return PairwiseWin
	case OtherPosition(candidatePos):
		return PairwiseLoss
	default:
		return PairwiseTie
	}
}

// CombinePairwise makes the result of one pair from its judgements: asA and
// asB are the candidate's outcomes when shown as A and as B ("" when not
// judged in that order), first the position of the first order, and swap
// whether both orders were judged.
//
// Without swap the outcome is the one judgement's. With swap, Orders are
// [as A, as B]; the outcome is theirs when they agree, and TIE (a non-win)
// when they disagree: a position-biased judge earns the candidate no win
// and no loss. An invalid judgement (unreadable reply) in either order
// makes the outcome INVALID, which the efficacy rule counts as a non-win.
func CombinePairwise(caseID string, trial int, pair suite.Pair, first, asA, asB string, swap bool, errs []string) PairwiseResult {
	r := PairwiseResult{Case: caseID, Trial: trial, Candidate: pair.Candidate, Baseline: pair.Baseline, First: first}
	if len(errs) > 0 {
		r.Error = strings.Join(errs, "; ")
	}
	if !swap {
		r.Outcome = asA
		if first == PositionB {
			r.Outcome = asB
		}
		return r
	}
	r.Orders = []string{asA, asB}
	switch {
	case asA == PairwiseInvalid || asB == PairwiseInvalid:
		r.Outcome = PairwiseInvalid
	case asA == asB:
		r.Outcome = asA
	default:
		r.Outcome = PairwiseTie
	}
	return r
}
