package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillgate/skillgate/runner/internal/bounded"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// This file holds the judge clients: how a judge question reaches a
// provider, the scripted model or a command on the host.

// Judge asks a judge one question and returns its reply.
type Judge interface {
	Ask(ctx context.Context, prompt string) (reply string, usage store.JudgeUsage, err error)
}

// packetJudge is a judge that takes the packet apart from the prompt (the
// command judge); the runner prefers AskPacket when a judge has it.
type packetJudge interface {
	AskPacket(ctx context.Context, prompt string, packet json.RawMessage) (string, store.JudgeUsage, error)
}

// NewJudge makes the plan's judge. A scripted judge starts its own
// gateway; close stops it. Missing credentials are an error here, before
// anything runs. A command judge runs in suiteDir, and a relative program
// path in its command is the suite folder's.
func NewJudge(p *plan.Plan, suiteDir string) (j Judge, closeFn func(), err error) {
	if p.Judge == nil {
		return nil, nil, errors.New("new judge: the plan has no judge")
	}
	timeout, err := time.ParseDuration(p.Limits.Timeout)
	if err != nil {
		return nil, nil, fmt.Errorf("new judge: limits.timeout: %w", err)
	}
	return newJudge(p.Judge.Judge, timeout, suiteDir)
}

// NewAdjudicator makes the judge that adjudicates the plan's disputes,
// as NewJudge makes the judge; it is nil (with a close that does nothing)
// when the judge adjudicates itself, in fresh calls, or nothing is
// adjudicated.
func NewAdjudicator(p *plan.Plan, suiteDir string) (j Judge, closeFn func(), err error) {
	if p.Judge == nil || !p.Judge.Adjudication.Enabled || p.Judge.Adjudication.Judge == nil || p.Judge.Mode == "pairwise" {
		return nil, func() {}, nil
	}
	timeout, err := time.ParseDuration(p.Limits.Timeout)
	if err != nil {
		return nil, nil, fmt.Errorf("new adjudicator: limits.timeout: %w", err)
	}
	aj, _ := grade.AdjudicatorOf(p.Judge)
	j, closeFn, err = newJudge(aj, timeout, suiteDir)
	if err != nil {
		return nil, nil, fmt.Errorf("adjudicator: %w", err)
	}
	return j, closeFn, nil
}

func newJudge(pj suite.Judge, timeout time.Duration, suiteDir string) (Judge, func(), error) {
	nothing := func() {}
	switch pj.Provider {
	case "scripted":
		dir, err := os.MkdirTemp("", "sg-judge-")
		if err != nil {
			return nil, nil, fmt.Errorf("new judge: %w", err)
		}
		g, err := gateway.StartGateway(gateway.GatewayConfig{Dir: dir, Provider: "scripted", Script: pj.Script})
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
		conn, err := judgeConnection(pj)
		if err != nil {
			return nil, nil, err
		}
		client := &http.Client{}
		if pj.Provider == "anthropic" {
			return &messagesJudge{client: client, url: conn.Upstream + "/v1/messages", key: conn.Key, auth: conn.Auth, headers: conn.Headers, model: pj.Model, timeout: timeout, real: true}, nothing, nil
		}
		return &responsesJudge{client: client, url: conn.Upstream + "/v1/responses", key: conn.Key, auth: conn.Auth, headers: conn.Headers, model: pj.Model, timeout: timeout}, nothing, nil
	case "command":
		if len(pj.Command) == 0 {
			return nil, nil, errors.New("new judge: provider command needs judge.command")
		}
		argv := append([]string{}, pj.Command...)
		if strings.Contains(argv[0], "/") && !filepath.IsAbs(argv[0]) {
			// Absolute: the program runs in the suite folder, where a
			// relative path would be joined to it a second time.
			abs, err := filepath.Abs(filepath.Join(suiteDir, argv[0]))
			if err != nil {
				return nil, nil, fmt.Errorf("new judge: judge.command: %w", err)
			}
			argv[0] = abs
		}
		return &commandJudge{argv: argv, name: pj.Command[0], dir: suiteDir, model: pj.Model, timeout: timeout}, nothing, nil
	default:
		return nil, nil, fmt.Errorf("new judge: unknown provider %q", pj.Provider)
	}
}

// judgeConnection reads the real judge's connection from the host, as the
// gateway reads the agent's: its base URL (the suite's, the host's
// variable, the provider's default), its credential and extra headers.
func judgeConnection(pj suite.Judge) (gateway.Connection, error) {
	c, err := gateway.ReadConnection(judgeSettings(pj), "judge")
	if err != nil {
		return c, fmt.Errorf("new judge: %w", err)
	}
	return c, nil
}

func judgeSettings(pj suite.Judge) gateway.ConnectionSettings {
	return gateway.ConnectionSettings{Provider: pj.Provider, Upstream: pj.Upstream, UpstreamEnv: pj.UpstreamEnv, UpstreamDefault: pj.UpstreamDefault,
		CredentialEnv: pj.CredentialEnv, Auth: pj.Auth, Headers: pj.Headers}
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
	auth    string
	headers map[string]string
	model   string
	timeout time.Duration
	real    bool
}

func (j *messagesJudge) Ask(ctx context.Context, prompt string) (string, store.JudgeUsage, error) {
	body, _ := json.Marshal(map[string]any{
		"model": j.model, "max_tokens": judgeMaxTokens,
		"messages": []map[string]any{{"role": "user", "content": prompt}},
	})
	h := http.Header{"Content-Type": {"application/json"}, "Anthropic-Version": {"2023-06-01"}}
	gateway.Authorize(h, "anthropic", j.auth, j.key, j.headers)
	start := time.Now()
	var raws []gateway.RawExchange
	b, err := postJudge(ctx, j.client, j.url, h, body, j.timeout, j.real, &raws)
	if err != nil {
		return "", store.JudgeUsage{Raw: raws}, err
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
		return "", store.JudgeUsage{}, fmt.Errorf("judge: read messages response: %w", err)
	}
	var text strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	u := store.JudgeUsage{Model: m.Model, Seconds: time.Since(start).Seconds(), Raw: raws}
	if m.Usage != nil {
		u.Tokens = &grade.Tokens{Input: m.Usage.Input, Output: m.Usage.Output, CacheRead: m.Usage.CacheRead, CacheWrite: m.Usage.CacheWrite}
	}
	return text.String(), u, nil
}

// responsesJudge speaks the OpenAI Responses API, non-streaming.
type responsesJudge struct {
	client  *http.Client
	url     string
	key     string
	auth    string
	headers map[string]string
	model   string
	timeout time.Duration
}

func (j *responsesJudge) Ask(ctx context.Context, prompt string) (string, store.JudgeUsage, error) {
	body, _ := json.Marshal(map[string]any{"model": j.model, "input": prompt, "max_output_tokens": judgeMaxTokens})
	h := http.Header{"Content-Type": {"application/json"}}
	gateway.Authorize(h, "openai", j.auth, j.key, j.headers)
	start := time.Now()
	var raws []gateway.RawExchange
	b, err := postJudge(ctx, j.client, j.url, h, body, j.timeout, true, &raws)
	if err != nil {
		return "", store.JudgeUsage{Raw: raws}, err
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
		return "", store.JudgeUsage{}, fmt.Errorf("judge: read responses response: %w", err)
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
	u := store.JudgeUsage{Model: m.Model, Seconds: time.Since(start).Seconds(), Raw: raws}
	if m.Usage != nil {
		u.Tokens = &grade.Tokens{Input: m.Usage.Input - m.Usage.InputDetails.Cached, Output: m.Usage.Output, CacheRead: m.Usage.InputDetails.Cached}
	}
	return text.String(), u, nil
}

// postJudge POSTs a judge request and returns the 200 response's body.
// A real provider's 429, 5xx and connection errors are retried twice.
func postJudge(ctx context.Context, client *http.Client, url string, h http.Header, body []byte, timeout time.Duration, retry bool, raws *[]gateway.RawExchange) ([]byte, error) {
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
		b, status, err := postOnce(ctx, client, url, h, body, timeout, raws)
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

// postOnce makes one try, and appends it to raws as made, for the
// recording.
func postOnce(ctx context.Context, client *http.Client, url string, h http.Header, body []byte, timeout time.Duration, raws *[]gateway.RawExchange) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header = h.Clone()
	raw := gateway.RawExchange{Method: http.MethodPost, URL: url, StartedAt: time.Now(), RequestHeader: req.Header.Clone(), RequestBody: body}
	defer func() {
		raw.Latency = time.Since(raw.StartedAt)
		*raws = append(*raws, raw)
	}()
	resp, err := client.Do(req)
	if err != nil {
		raw.Err = err.Error()
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, judgeMaxBody))
	raw.Status, raw.ResponseHeader, raw.ResponseBody = resp.StatusCode, resp.Header.Clone(), b
	if err != nil {
		raw.Err = err.Error()
	}
	return b, resp.StatusCode, err
}

// commandJudge runs a program on the host: {"prompt": ..., "packet": ...}
// on its stdin, its reply (the JSON the prompt asks for) on its stdout.
// It runs in the suite folder with the host's environment, and is killed
// after the suite's limits.timeout.
type commandJudge struct {
	argv []string
	// name is the program as the suite wrote it, for messages.
	name    string
	dir     string
	model   string
	timeout time.Duration
}

// CommandJudgeInput is what a command judge reads on its stdin.
type CommandJudgeInput struct {
	Prompt string          `json:"prompt"`
	Packet json.RawMessage `json:"packet"`
}

func (j *commandJudge) Ask(ctx context.Context, prompt string) (string, store.JudgeUsage, error) {
	return j.AskPacket(ctx, prompt, nil)
}

func (j *commandJudge) AskPacket(ctx context.Context, prompt string, packet json.RawMessage) (string, store.JudgeUsage, error) {
	if packet == nil {
		packet = json.RawMessage("null")
	}
	in, err := json.Marshal(CommandJudgeInput{Prompt: prompt, Packet: packet})
	if err != nil {
		return "", store.JudgeUsage{}, fmt.Errorf("judge command: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, j.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.argv[0], j.argv[1:]...)
	cmd.Dir = j.dir
	cmd.Stdin = bytes.NewReader(in)
	stdout, stderr := bounded.NewBuffer(judgeMaxBody), bounded.NewBuffer(4<<10)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	u := store.JudgeUsage{Model: j.model, Seconds: time.Since(start).Seconds()}
	if ctx.Err() == context.DeadlineExceeded {
		return "", u, fmt.Errorf("judge command %s: timed out after %s", j.program(), j.timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(string(stderr.Bytes()))
		if msg != "" {
			msg = ": " + msg
		}
		return "", u, fmt.Errorf("judge command %s: %w%s", j.program(), err, msg)
	}
	if stdout.Cut() {
		return "", u, fmt.Errorf("judge command %s: reply over %d bytes", j.program(), judgeMaxBody)
	}
	return string(stdout.Bytes()), u, nil
}

// program names the command judge's program in messages.
func (j *commandJudge) program() string {
	if j.name != "" {
		return j.name
	}
	return j.argv[0]
}
