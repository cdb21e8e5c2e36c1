package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// checkTimeout bounds one judge check.
const checkTimeout = 30 * time.Second

// Check asks a real judge's provider (and a real adjudicator's) for the
// judge's model with the judge's own key, GET /v1/models/{model}, before any
// cell is paid for: a refused key, a model the provider does not know or a
// provider out of reach is an error saying what to fix, where otherwise every
// judgement of the run would fail after its cells had run. The scripted and
// command judges have nothing to check.
func Check(ctx context.Context, p *plan.Plan) error {
	if p.Judge == nil {
		return nil
	}
	judges := []suite.Judge{p.Judge.Judge}
	if p.Judge.Adjudication.Enabled && p.Judge.Adjudication.Judge != nil {
		aj, _ := grade.AdjudicatorOf(p.Judge)
		judges = append(judges, aj)
	}
	for _, pj := range judges {
		if pj.Provider != "anthropic" && pj.Provider != "openai" {
			continue
		}
		if err := checkJudge(ctx, pj); err != nil {
			return err
		}
	}
	return nil
}

// checkJudge checks one real judge.
func checkJudge(ctx context.Context, pj suite.Judge) error {
	conn, err := judgeConnection(pj)
	if err != nil {
		return err
	}
	target := strings.TrimRight(conn.Upstream, "/") + "/v1/models/" + url.PathEscape(pj.Model)
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("check judge: %w", err)
	}
	if pj.Provider == "anthropic" {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	gateway.Authorize(req.Header, pj.Provider, conn.Auth, conn.Key, conn.Headers)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), conn.Key, "[REDACTED]")
		return fmt.Errorf("check judge %s: GET %s: %s; check judge.upstream and the way to it (no cell was started)", pj.Provider, target, msg)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	what := fmt.Sprintf("HTTP %d", resp.StatusCode)
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		what += " " + strings.TrimSpace(e.Error.Type+": "+strings.ReplaceAll(e.Error.Message, conn.Key, "[REDACTED]"))
	}
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("check judge %s: %s answered GET /v1/models/%s with %s; the key in %s is refused: fix it and run again (no cell was started)",
			pj.Provider, conn.Upstream, pj.Model, what, pj.CredentialEnv)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("check judge %s: %s does not know judge model %q (GET /v1/models/%s: %s): fix judge.model and run again (no cell was started)",
			pj.Provider, conn.Upstream, pj.Model, pj.Model, what)
	default:
		// A transient answer (429, 5xx) says nothing of the key or the
		// model: the run goes on, and judgements that meet it too fail.
		return nil
	}
}
