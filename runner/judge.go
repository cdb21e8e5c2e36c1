package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline"
)

// Judging happens after deterministic grading, from stored rollouts alone.
//
// Storage, under the run folder:
//
//	store/packets/KEY.json     the blinded packet sent (for rejudging, audit)
//	store/judgements/KEY.json  the judge's reply, usage and what was read from it
//	store/grades/GRADE.json    rubric mode: the judged CellResult
//
// A rubric judgement's KEY is the cell's grade key, which already holds
// the judge's identity (templates and seed included): changing the judge
// regrades without a new rollout. A pairwise judgement's KEY is
// pipeline.PairwiseKey: both cells' grade keys, the judge, and the
// candidate's position (A or B).
//
// A judge call that fails (network, HTTP error, timeout, a command's
// non-zero exit) stores nothing: the next run asks again, and until then
// the report is INCOMPLETE. A reply that cannot be read is stored: it makes
// a rubric cell invalid and a pairwise judgement INVALID.

const (
	storePackets    = "store/packets"
	storeJudgements = "store/judgements"
)

// Judge asks a judge one question and returns its reply.
type Judge interface {
	Ask(ctx context.Context, prompt string) (reply string, usage JudgeUsage, err error)
}

// packetJudge is a judge that takes the packet apart from the prompt (the
// command judge); the runner prefers AskPacket when a judge has it.
type packetJudge interface {
	AskPacket(ctx context.Context, prompt string, packet json.RawMessage) (string, JudgeUsage, error)
}

// JudgeUsage is what one judge call used, as far as the judge reports it.
type JudgeUsage struct {
	Model   string           `json:"model,omitempty"`
	Tokens  *pipeline.Tokens `json:"tokens,omitempty"`
	Seconds float64          `json:"seconds"`
}

// Judgement is one stored judge call: the reply and what was read from it.
type Judgement struct {
	Key   string        `json:"key"`
	Mode  string        `json:"mode"`
	Judge digest.Digest `json:"judge"`
	// Cells are the judged cells: the cell, or the candidate then the
	// baseline. They never reach the judge.
	Cells []string `json:"cells"`
	// Position is the candidate's position (A or B) in a pairwise packet.
	Position string     `json:"position,omitempty"`
	Reply    string     `json:"reply"`
	Usage    JudgeUsage `json:"usage"`
	// Error says why the reply is invalid; empty when it was read.
	Error    string                     `json:"error,omitempty"`
	Criteria []pipeline.CriterionResult `json:"criteria,omitempty"`
	Winner   string                     `json:"winner,omitempty"`
	Evidence string                     `json:"evidence,omitempty"`
	// Outcome is the candidate's WIN, TIE, LOSS or INVALID (pairwise).
	Outcome string `json:"outcome,omitempty"`
}

// --- the judges ---

// NewJudge makes the plan's judge. A scripted judge starts its own
// gateway; close stops it. Missing credentials are an error here, before
// anything runs.
func NewJudge(p *pipeline.Plan, suiteDir string) (j Judge, closeFn func(), err error) {
	if p.Judge == nil {
		return nil, nil, errors.New("new judge: the plan has no judge")
	}
	pj := p.Judge.Judge
	timeout, err := time.ParseDuration(p.Limits.Timeout)
	if err != nil {
		return nil, nil, fmt.Errorf("new judge: limits.timeout: %w", err)
	}
	nothing := func() {}
	switch pj.Provider {
	case "scripted":
		dir, err := os.MkdirTemp("", "sg-judge-")
		if err != nil {
			return nil, nil, fmt.Errorf("new judge: %w", err)
		}
		g, err := StartGateway(GatewayConfig{Dir: dir, Provider: "scripted", Script: pj.Script})
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, fmt.Errorf("new judge: %w", err)
		}
		sock := g.Socket()
		client := &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
		}}
		mj := &messagesJudge{client: client, url: "http://skillgate-judge/v1/messages", key: g.NewCellToken("judge"), model: pj.Model, timeout: timeout}
		return mj, func() { g.Close(); os.RemoveAll(dir) }, nil
	case "anthropic", "openai":
		key, base, err := judgeCredential(pj)
		if err != nil {
			return nil, nil, err
		}
		client := &http.Client{}
		if pj.Provider == "anthropic" {
			return &messagesJudge{client: client, url: base + "/v1/messages", key: key, model: pj.Model, timeout: timeout, real: true}, nothing, nil
		}
		return &responsesJudge{client: client, url: base + "/v1/responses", key: key, model: pj.Model, timeout: timeout}, nothing, nil
	case "command":
		if len(pj.Command) == 0 {
			return nil, nil, errors.New("new judge: provider command needs judge.command")
		}
		argv := append([]string{}, pj.Command...)
		if strings.Contains(argv[0], "/") && !filepath.IsAbs(argv[0]) {
			argv[0] = filepath.Join(suiteDir, argv[0])
		}
		return &commandJudge{argv: argv, dir: suiteDir, model: pj.Model, timeout: timeout}, nothing, nil
	default:
		return nil, nil, fmt.Errorf("new judge: unknown provider %q", pj.Provider)
	}
}

// judgeCredential reads the real judge's key from the host and checks its
// upstream.
func judgeCredential(pj pipeline.Judge) (key, base string, err error) {
	if pj.CredentialEnv == "" {
		return "", "", fmt.Errorf("new judge: judge.credentialEnv names no variable holding the %s key", pj.Provider)
	}
	if key = os.Getenv(pj.CredentialEnv); key == "" {
		return "", "", fmt.Errorf("new judge: %s is not set; set it to the %s key, or use judge provider \"scripted\" or \"command\"", pj.CredentialEnv, pj.Provider)
	}
	u, err := url.Parse(pj.Upstream)
	if pj.Upstream == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("new judge: judge.upstream %q is not an http(s) URL (such as https://api.%s.com)", pj.Upstream, pj.Provider)
	}
	return key, strings.TrimRight(pj.Upstream, "/"), nil
}

// judgeMaxTokens bounds a judge's reply.
const judgeMaxTokens = 4096

// judgeMaxBody bounds a judge response read.
const judgeMaxBody = 8 << 20

// messagesJudge speaks the Anthropic Messages API, non-streaming: to the
// provider (real) or to a scripted gateway over its unix socket.
type messagesJudge struct {
	client  *http.Client
	url     string
	key     string
	model   string
	timeout time.Duration
	real    bool
}

func (j *messagesJudge) Ask(ctx context.Context, prompt string) (string, JudgeUsage, error) {
	body, _ := json.Marshal(map[string]any{
		"model": j.model, "max_tokens": judgeMaxTokens,
		"messages": []map[string]any{{"role": "user", "content": prompt}},
	})
	h := http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {j.key}, "Anthropic-Version": {"2023-06-01"}}
	start := time.Now()
	b, err := postJudge(ctx, j.client, j.url, h, body, j.timeout, j.real)
	if err != nil {
		return "", JudgeUsage{}, err
	}
	var m struct {
		Model   string `json:"model"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Usage *struct {
			Input      int64 `json:"input_tokens"`
			Output     int64 `json:"output_tokens"`
			CacheRead  int64 `json:"cache_read_input_tokens"`
			CacheWrite int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", JudgeUsage{}, fmt.Errorf("judge: read messages response: %w", err)
	}
	var text strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	u := JudgeUsage{Model: m.Model, Seconds: time.Since(start).Seconds()}
	if m.Usage != nil {
		u.Tokens = &pipeline.Tokens{Input: m.Usage.Input, Output: m.Usage.Output, CacheRead: m.Usage.CacheRead, CacheWrite: m.Usage.CacheWrite}
	}
	return text.String(), u, nil
}

// responsesJudge speaks the OpenAI Responses API, non-streaming.
type responsesJudge struct {
	client  *http.Client
	url     string
	key     string
	model   string
	timeout time.Duration
}

func (j *responsesJudge) Ask(ctx context.Context, prompt string) (string, JudgeUsage, error) {
	body, _ := json.Marshal(map[string]any{"model": j.model, "input": prompt, "max_output_tokens": judgeMaxTokens})
	h := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + j.key}}
	start := time.Now()
	b, err := postJudge(ctx, j.client, j.url, h, body, j.timeout, true)
	if err != nil {
		return "", JudgeUsage{}, err
	}
	var m struct {
		Model  string `json:"model"`
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage *struct {
			Input        int64 `json:"input_tokens"`
			Output       int64 `json:"output_tokens"`
			InputDetails struct {
				Cached int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", JudgeUsage{}, fmt.Errorf("judge: read responses response: %w", err)
	}
	var text strings.Builder
	for _, o := range m.Output {
		if o.Type != "message" {
			continue
		}
		for _, c := range o.Content {
			if c.Type == "output_text" {
				text.WriteString(c.Text)
			}
		}
	}
	u := JudgeUsage{Model: m.Model, Seconds: time.Since(start).Seconds()}
	if m.Usage != nil {
		u.Tokens = &pipeline.Tokens{Input: m.Usage.Input - m.Usage.InputDetails.Cached, Output: m.Usage.Output, CacheRead: m.Usage.InputDetails.Cached}
	}
	return text.String(), u, nil
}

// postJudge POSTs a judge request and returns the 200 response's body.
// A real provider's 429, 5xx and connection errors are retried twice.
func postJudge(ctx context.Context, client *http.Client, url string, h http.Header, body []byte, timeout time.Duration, retry bool) ([]byte, error) {
	attempts := 1
	if retry {
		attempts = 3
	}
	var last error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(i) * 2 * time.Second):
			}
		}
		b, status, err := postOnce(ctx, client, url, h, body, timeout)
		switch {
		case err == nil && status == http.StatusOK:
			return b, nil
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			last = fmt.Errorf("judge: POST %s: %w", url, err)
		default:
			last = fmt.Errorf("judge: POST %s: HTTP %d: %s", url, status, strings.TrimSpace(string(b[:min(len(b), 500)])))
			if status != http.StatusTooManyRequests && status < 500 {
				return nil, last
			}
		}
	}
	return nil, last
}

func postOnce(ctx context.Context, client *http.Client, url string, h http.Header, body []byte, timeout time.Duration) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header = h.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, judgeMaxBody))
	return b, resp.StatusCode, err
}

// commandJudge runs a program on the host: {"prompt": ..., "packet": ...}
// on its stdin, its reply (the JSON the prompt asks for) on its stdout.
// It runs in the suite folder with the host's environment, and is killed
// after the suite's limits.timeout.
type commandJudge struct {
	argv    []string
	dir     string
	model   string
	timeout time.Duration
}

// CommandJudgeInput is what a command judge reads on its stdin.
type CommandJudgeInput struct {
	Prompt string          `json:"prompt"`
	Packet json.RawMessage `json:"packet"`
}

func (j *commandJudge) Ask(ctx context.Context, prompt string) (string, JudgeUsage, error) {
	return j.AskPacket(ctx, prompt, nil)
}

func (j *commandJudge) AskPacket(ctx context.Context, prompt string, packet json.RawMessage) (string, JudgeUsage, error) {
	if packet == nil {
		packet = json.RawMessage("null")
	}
	in, err := json.Marshal(CommandJudgeInput{Prompt: prompt, Packet: packet})
	if err != nil {
		return "", JudgeUsage{}, fmt.Errorf("judge command: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, j.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.argv[0], j.argv[1:]...)
	cmd.Dir = j.dir
	cmd.Stdin = bytes.NewReader(in)
	stdout, stderr := &cappedBuffer{limit: judgeMaxBody}, &cappedBuffer{limit: 4 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	u := JudgeUsage{Model: j.model, Seconds: time.Since(start).Seconds()}
	if ctx.Err() == context.DeadlineExceeded {
		return "", u, fmt.Errorf("judge command %s: timed out after %s", j.argv[0], j.timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(string(stderr.buf))
		if msg != "" {
			msg = ": " + msg
		}
		return "", u, fmt.Errorf("judge command %s: %w%s", j.argv[0], err, msg)
	}
	if stdout.total > stdout.limit {
		return "", u, fmt.Errorf("judge command %s: reply over %d bytes", j.argv[0], stdout.limit)
	}
	return string(stdout.buf), u, nil
}

// --- the store ---

// PacketPath and JudgementPath are where a packet and a judgement live.
func (s *Store) PacketPath(key string) string {
	return filepath.Join(s.Dir, storePackets, key+".json")
}

// JudgementPath is where the judgement stored under key lives.
func (s *Store) JudgementPath(key string) string {
	return filepath.Join(s.Dir, storeJudgements, key+".json")
}

// Judgement reads the judgement stored under key.
func (s *Store) Judgement(key string) (*Judgement, bool, error) {
	b, err := os.ReadFile(s.JudgementPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read judgement %s: %w", key, err)
	}
	var j Judgement
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, false, fmt.Errorf("read judgement %s: %w", key, err)
	}
	return &j, true, nil
}

func (s *Store) putJudgement(j *Judgement) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if err := s.putFile(s.JudgementPath(j.Key), append(b, '\n')); err != nil {
		return fmt.Errorf("store judgement %s: %w", j.Key, err)
	}
	return nil
}

func (s *Store) putPacket(key string, packet []byte) error {
	if err := s.putFile(s.PacketPath(key), append(append([]byte{}, packet...), '\n')); err != nil {
		return fmt.Errorf("store packet %s: %w", key, err)
	}
	return nil
}

// --- judging a run ---

// JudgeCells judges what the plan's judge must and the store lacks, with
// opts.Jobs calls at once, and stores every packet and judgement: in rubric
// mode every graded cell whose case has a rubric (failed ones too, for the
// audit trail: they stay failed), its judged result replacing its grade;
// in pairwise mode every (case, trial, pair) whose two cells are graded,
// in the seeded order and, with swap, in the reversed order too. It
// returns the number of judgements made (or, stored before, applied) and
// the first failed call's error.
func JudgeCells(ctx context.Context, p *pipeline.Plan, j Judge, opts Options) (calls int, err error) {
	if p.Judge == nil {
		return 0, nil
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	store := &Store{Dir: opts.Out}
	results, err := Results(p, store)
	if err != nil {
		return 0, err
	}
	jr := &judgeRun{plan: p, judge: j, store: store, opts: opts, cases: map[string]pipeline.PlanCase{}}
	for _, pc := range p.Cases {
		jr.cases[pc.ID] = pc
	}
	var tasks []func(context.Context) (string, error)
	if p.Judge.Mode == "pairwise" {
		tasks = jr.pairTasks(results)
	} else {
		tasks = jr.rubricTasks(results)
	}
	if len(tasks) == 0 {
		return 0, nil
	}
	if err := pinFixtures(p, opts.SuiteDir, store, p.Cells); err != nil {
		return 0, err // packets show the fixture from its snapshot
	}
	fmt.Fprintf(opts.Log, "judging: %d %s judgements by the %s judge (%d jobs)\n", len(tasks), p.Judge.Mode, p.Judge.Provider, max(opts.Jobs, 1))
	var mu sync.Mutex
	var first error
	done := 0
	forEach(ctx, opts.Jobs, tasks, func(task func(context.Context) (string, error)) {
		line, err := task(ctx)
		mu.Lock()
		defer mu.Unlock()
		done++
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(opts.Log, "[judge %d/%d] %v\n", done, len(tasks), err)
				if first == nil {
					first = err
				}
			}
			return
		}
		calls++
		fmt.Fprintf(opts.Log, "[judge %d/%d] %s\n", done, len(tasks), line)
	})
	if first == nil {
		first = ctx.Err()
	}
	return calls, first
}

type judgeRun struct {
	plan  *pipeline.Plan
	judge Judge
	store *Store
	opts  Options
	cases map[string]pipeline.PlanCase
}

// ask sends the prompt (and, to a command judge, the packet).
func (jr *judgeRun) ask(ctx context.Context, prompt string, packet []byte) (string, JudgeUsage, error) {
	if pj, ok := jr.judge.(packetJudge); ok {
		return pj.AskPacket(ctx, prompt, packet)
	}
	return jr.judge.Ask(ctx, prompt)
}

// attempt reads a graded cell's rollout as the packets need it.
func (jr *judgeRun) attempt(c pipeline.Cell, r pipeline.CellResult) (pipeline.JudgeAttempt, error) {
	ro, ok, err := jr.store.Rollout(c.Rollout)
	if err != nil {
		return pipeline.JudgeAttempt{}, err
	}
	if !ok {
		return pipeline.JudgeAttempt{}, fmt.Errorf("judge %s: no stored rollout %s", c.ID, c.Rollout)
	}
	return pipeline.JudgeAttempt{Cell: c, Answer: ro.Answer, World: cellWorld(jr.store, jr.opts.SuiteDir, jr.cases[c.Case], ro), Checks: r.Checks}, nil
}

// cellWorld is a stored rollout's final workspace.
func cellWorld(store *Store, suiteDir string, pc pipeline.PlanCase, ro *Rollout) pipeline.World {
	g := &grader{store: store, opts: Options{SuiteDir: suiteDir}}
	return g.world(pc, ro)
}

func (jr *judgeRun) rubricTasks(results []pipeline.CellResult) []func(context.Context) (string, error) {
	var tasks []func(context.Context) (string, error)
	seen := map[digest.Digest]bool{}
	for i, c := range jr.plan.Cells {
		r := results[i]
		if !pipeline.RubricJudged(jr.plan, jr.cases[c.Case]) || !r.Valid() || r.Judge != nil || seen[c.Grade] {
			continue
		}
		seen[c.Grade] = true
		tasks = append(tasks, func(ctx context.Context) (string, error) { return jr.rubricCell(ctx, c, r) })
	}
	return tasks
}

// rubricCell judges one cell's rubric and stores its judged result.
func (jr *judgeRun) rubricCell(ctx context.Context, c pipeline.Cell, r pipeline.CellResult) (string, error) {
	pc := jr.cases[c.Case]
	a, err := jr.attempt(c, r)
	if err != nil {
		return "", err
	}
	pk, err := pipeline.BuildRubricPacket(jr.plan, pc, a)
	if err != nil {
		return "", fmt.Errorf("judge %s: %w", c.ID, err)
	}
	packet := pipeline.EncodePacket(pk)
	key := c.Grade.Encoded()
	if err := jr.store.putPacket(key, packet); err != nil {
		return "", err
	}
	jd, ok, err := jr.store.Judgement(key)
	if err != nil {
		return "", err
	}
	if !ok {
		reply, usage, err := jr.ask(ctx, pipeline.RenderJudgePrompt(jr.plan.Judge.Templates.Rubric, packet), packet)
		if err != nil {
			return "", fmt.Errorf("judge %s: %w", c.ID, err)
		}
		jd = &Judgement{Key: key, Mode: "rubric", Judge: jr.plan.Judge.Digest, Cells: []string{c.ID}, Reply: reply, Usage: usage}
		if jd.Criteria, err = pipeline.ParseRubricReply(reply, len(pc.Rubric)); err != nil {
			jd.Error = err.Error()
		}
		if err := jr.store.putJudgement(jd); err != nil {
			return "", err
		}
	}
	nr := pipeline.ApplyRubric(r, pc, pipeline.CellJudgement{Candidate: pk.Candidate, Key: key, Valid: jd.Error == "", Reason: jd.Error, Criteria: jd.Criteria,
		Seconds: jd.Usage.Seconds, Tokens: jd.Usage.Tokens})
	if err := jr.store.putGrade(nr); err != nil {
		return "", err
	}
	switch {
	case jd.Error != "":
		return fmt.Sprintf("%s: judge reply invalid (the cell is invalid): %s", c.ID, jd.Error), nil
	default:
		passed := 0
		for _, cr := range jd.Criteria {
			if cr.Pass {
				passed++
			}
		}
		return fmt.Sprintf("%s: %d of %d criteria met, cell %s", c.ID, passed, len(jd.Criteria), map[bool]string{true: "passes", false: "fails"}[nr.Passed]), nil
	}
}

// pairSlot is one (case, trial, pair) whose two cells are graded.
type pairSlot struct {
	pc         pipeline.PlanCase
	trial      int
	pair       pipeline.Pair
	cand, base pipeline.Cell
	candR      pipeline.CellResult
	baseR      pipeline.CellResult
	first      string
	positions  []string // the orders to judge, by the candidate's position
	keys       []string // their judgement keys
	swap       bool
}

// pairSlots lists the pairs the plan's judge compares whose two cells have
// valid grades, in case, trial, pair order.
func pairSlots(p *pipeline.Plan, results []pipeline.CellResult) []pairSlot {
	idx := map[string]int{}
	for i, c := range p.Cells {
		idx[c.ID] = i
	}
	var out []pairSlot
	for _, pc := range p.Cases {
		for trial := 1; trial <= p.Suite.Trials; trial++ {
			for _, pair := range p.Judge.Pairs {
				ci, okC := idx[pipeline.CellID(pc.ID, pair.Candidate, trial)]
				bi, okB := idx[pipeline.CellID(pc.ID, pair.Baseline, trial)]
				if !okC || !okB || !results[ci].Valid() || !results[bi].Valid() {
					continue
				}
				s := pairSlot{pc: pc, trial: trial, pair: pair, cand: p.Cells[ci], base: p.Cells[bi], candR: results[ci], baseR: results[bi],
					first: pipeline.PairwiseOrder(p.Suite.Seed, pc.ID, trial, pair), swap: p.Judge.Swap}
				s.positions = []string{s.first}
				if s.swap {
					s.positions = append(s.positions, pipeline.OtherPosition(s.first))
				}
				for _, pos := range s.positions {
					s.keys = append(s.keys, pipeline.PairwiseKey(s.cand.Grade, s.base.Grade, p.Judge.Digest, pos).Encoded())
				}
				out = append(out, s)
			}
		}
	}
	return out
}

func (jr *judgeRun) pairTasks(results []pipeline.CellResult) []func(context.Context) (string, error) {
	var tasks []func(context.Context) (string, error)
	seen := map[string]bool{}
	for _, s := range pairSlots(jr.plan, results) {
		for i, pos := range s.positions {
			key := s.keys[i]
			if seen[key] {
				continue
			}
			seen[key] = true
			if _, ok, err := jr.store.Judgement(key); err == nil && ok {
				continue
			}
			tasks = append(tasks, func(ctx context.Context) (string, error) { return jr.pairOrder(ctx, s, pos, key) })
		}
	}
	return tasks
}

// pairOrder judges one pair in one order and stores the judgement.
func (jr *judgeRun) pairOrder(ctx context.Context, s pairSlot, pos, key string) (string, error) {
	cand, err := jr.attempt(s.cand, s.candR)
	if err != nil {
		return "", err
	}
	base, err := jr.attempt(s.base, s.baseR)
	if err != nil {
		return "", err
	}
	first, second := cand, base
	if pos == pipeline.PositionB {
		first, second = base, cand
	}
	pk, err := pipeline.BuildPairwisePacket(jr.plan, s.pc, first, second)
	if err != nil {
		return "", fmt.Errorf("judge %s/%d: %w", s.pc.ID, s.trial, err)
	}
	packet := pipeline.EncodePacket(pk)
	if err := jr.store.putPacket(key, packet); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s/%d %s vs %s (%s as %s)", s.pc.ID, s.trial, s.pair.Candidate, s.pair.Baseline, s.pair.Candidate, pos)
	reply, usage, err := jr.ask(ctx, pipeline.RenderJudgePrompt(jr.plan.Judge.Templates.Pairwise, packet), packet)
	if err != nil {
		return "", fmt.Errorf("judge %s: %w", name, err)
	}
	jd := &Judgement{Key: key, Mode: "pairwise", Judge: jr.plan.Judge.Digest, Cells: []string{s.cand.ID, s.base.ID}, Position: pos, Reply: reply, Usage: usage}
	if jd.Winner, jd.Evidence, err = pipeline.ParsePairwiseReply(reply); err != nil {
		jd.Error, jd.Outcome = err.Error(), pipeline.PairwiseInvalid
	} else {
		jd.Outcome = pipeline.PairwiseOutcome(jd.Winner, pos)
	}
	if err := jr.store.putJudgement(jd); err != nil {
		return "", err
	}
	if jd.Error != "" {
		return fmt.Sprintf("%s: INVALID: %s", name, jd.Error), nil
	}
	return fmt.Sprintf("%s: %s", name, jd.Outcome), nil
}

// judgedResults reads what the judge decided from the store alone: the
// results with unjudged rubric cells made missing, the pairwise results,
// and how many judgements the plan asks for are not stored.
func judgedResults(p *pipeline.Plan, store *Store, results []pipeline.CellResult) ([]pipeline.CellResult, []pipeline.PairwiseResult, int, string, error) {
	if p.Judge == nil {
		return results, nil, 0, "", nil
	}
	if p.Judge.Mode != "pairwise" {
		cases := map[string]pipeline.PlanCase{}
		for _, pc := range p.Cases {
			cases[pc.ID] = pc
		}
		missing := 0
		for i, r := range results {
			if pipeline.RubricJudged(p, cases[r.Case]) && r.Valid() && r.Judge == nil {
				results[i].Status, results[i].Error, results[i].Passed = pipeline.StatusMissing, "graded but not judged", false
				missing++
			}
		}
		return results, nil, missing, "cells", nil
	}
	var out []pipeline.PairwiseResult
	missing := 0
	for _, s := range pairSlots(p, results) {
		outcome := map[string]string{}
		var errs []string
		complete := true
		for i, pos := range s.positions {
			jd, ok, err := store.Judgement(s.keys[i])
			if err != nil {
				return nil, nil, 0, "", err
			}
			if !ok {
				complete = false
				break
			}
			outcome[pos] = jd.Outcome
			if jd.Error != "" {
				errs = append(errs, fmt.Sprintf("%s as %s: %s", s.pair.Candidate, pos, jd.Error))
			}
		}
		if !complete {
			missing++
			continue
		}
		out = append(out, pipeline.CombinePairwise(s.pc.ID, s.trial, s.pair, s.first, outcome[pipeline.PositionA], outcome[pipeline.PositionB], s.swap, errs))
	}
	return results, out, missing, "pairs", nil
}
