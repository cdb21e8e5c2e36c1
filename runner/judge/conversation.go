package judge

import (
	"context"
	"errors"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/redact"
	"github.com/skillgate/skillgate/runner/spend"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// A question is one judge call about one packet: how it is asked, how its
// reply is read, and what it is called when it fails.
type question struct {
	// key is the judgement's: what it is stored and metered under.
	key string
	// mode is "rubric" or "pairwise": how the reply is read.
	mode string
	// role is store.RoleJudge or store.RoleAdjudicator.
	role string
	// name says what is judged, for messages and failures.
	name string
	// cells are the judged cells; they never reach the judge.
	cells []string
	// position is the candidate's in a pairwise packet (A or B).
	position string
	// criteria is how many criteria a rubric reply must hold.
	criteria int
	// template is the prompt's, with {{packet}} where the packet goes.
	template string
	packet   []byte
	// prices are what the call costs, when it is metered.
	prices *suite.Prices
}

// conversation is how every judge call goes, for a run's judging and for
// rejudging alike: the prompt rendered from the template and the packet,
// asked of the judge (a command judge is given the packet too), metered
// under the run folder's spend cap, the reply redacted and read, the
// judgement stored.
type conversation struct {
	// judge is the identity every judgement records.
	judge digest.Digest
	// budget meters the calls; nil asks them unmetered.
	budget *spend.Budget
	redact *redact.Redactor
	// record, when set, stores each call's exchanges in the run folder
	// (the judgement names them in usage.exchanges); provider labels them.
	record   *gateway.Recorder
	provider string
	// put stores a judgement.
	put func(*store.Judgement) error
}

// ask puts q to j and stores the judgement it read from the reply, an
// unreadable reply included (its Error says why). A call the spend cap
// leaves no room for returns spend.ErrCap; a call that fails, a
// *callError; any other error is the store's.
func (c *conversation) ask(ctx context.Context, j Judge, q question) (*store.Judgement, error) {
	reply, usage, err := c.call(ctx, j, q)
	if errors.Is(err, spend.ErrCap) {
		return nil, &capError{key: q.key, role: q.role, name: q.name, cells: q.cells, err: err}
	}
	if err != nil {
		return nil, &callError{key: q.key, role: q.role, name: q.name, cells: q.cells, err: err}
	}
	jd := &store.Judgement{Key: q.key, Mode: q.mode, Judge: c.judge, Cells: q.cells, Position: q.position, Reply: c.redact.String(reply), Usage: usage}
	if q.role != store.RoleJudge {
		jd.Role = q.role
	}
	if q.mode == "pairwise" {
		if jd.Winner, jd.Evidence, err = grade.ParsePairwiseReply(jd.Reply); err != nil {
			jd.Error, jd.Outcome = err.Error(), grade.PairwiseInvalid
		} else {
			jd.Outcome = grade.PairwiseOutcome(jd.Winner, q.position)
		}
	} else if jd.Criteria, err = grade.ParseRubricReply(jd.Reply, q.criteria); err != nil {
		jd.Error = err.Error()
	}
	if err := c.put(jd); err != nil {
		return nil, err
	}
	return jd, nil
}

// call asks q of j once the spend cap admits the call, and enters its cost,
// at q's prices, in the folder's ledger under q's key.
func (c *conversation) call(ctx context.Context, j Judge, q question) (string, store.JudgeUsage, error) {
	prompt := grade.RenderJudgePrompt(q.template, q.packet)
	if c.budget == nil {
		reply, usage, err := askJudge(ctx, j, prompt, q.packet)
		return reply, usage, c.recordCall(q, &usage, err)
	}
	res, err := c.budget.AdmitJudge(ctx, q.key, callBound(q.prices, prompt))
	if err != nil {
		return "", store.JudgeUsage{}, err
	}
	reply, usage, err := askJudge(ctx, j, prompt, q.packet)
	err = c.recordCall(q, &usage, err)
	usd, estimated, priced := spend.Cost(q.prices, usage.Tokens, err == nil || usage.Tokens != nil)
	if serr := c.budget.Settle(res, store.SpendEntry{Kind: store.SpendJudge, ID: q.key, USD: usd, Estimated: estimated}, priced); serr != nil && err == nil {
		err = serr
	}
	return reply, usage, err
}

// recordCall stores the call's exchanges, when there are any and the
// conversation records, and names them in its usage; err is the call's,
// returned unless it had none and the recording failed.
func (c *conversation) recordCall(q question, u *store.JudgeUsage, err error) error {
	raws := u.Raw
	u.Raw = nil
	if c.record == nil || len(raws) == 0 {
		return err
	}
	d, rerr := c.record.PutExchanges(q.role+" "+q.key, c.provider, "", c.redact, raws)
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	u.Exchanges = d
	return err
}

// askJudge sends the prompt (and, to a command judge, the packet) to j.
func askJudge(ctx context.Context, j Judge, prompt string, packet []byte) (string, store.JudgeUsage, error) {
	if pj, ok := j.(packetJudge); ok {
		return pj.AskPacket(ctx, prompt, packet)
	}
	return j.Ask(ctx, prompt)
}

// callError is a judgement that could not be made (its call failed, or
// its packet could not be built): stored as a JudgeFailure under key.
type callError struct {
	key, role, name string
	cells           []string
	err             error
}

func (e *callError) Error() string { return e.name + ": " + e.err.Error() }
