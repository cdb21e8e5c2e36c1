package plan

import (
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// TestProviderSettingsAndKeys: a case's temperature (0 included, which is not
// unset) and effort, and the agent's, move the rollout keys of the cells
// they apply to; how the host reaches the provider (the base URL's
// variable, the auth, extra headers) moves none, and a judge of the
// agent's provider takes the agent's connection settings.
func TestProviderSettingsAndKeys(t *testing.T) {
	const agentLine = `agent: agents.command & {command: ["sh", "-c", "echo hi"]}`
	keys := func(agent, caseFields string) (map[string]string, *Plan) {
		f := suitetest.Edit(t, "suite/suite.cue", agentLine, agent)
		f["suite/cases.cue"] = strings.Replace(f["suite/cases.cue"], `prompt:  "Add an entry."`, `prompt:  "Add an entry."`+"\n\t\t"+caseFields, 1)
		p := compileRoot(t, suitetest.WriteSuite(t, f))
		out := map[string]string{}
		for _, c := range p.Cells {
			out[c.ID] = c.Rollout.String()
		}
		return out, p
	}
	claude := `agent: agents.claudeCode`
	base, _ := keys(claude, "")
	zero, _ := keys(claude, "temperature: 0")
	half, _ := keys(claude, "temperature: 0.5")
	effort, _ := keys(claude, `effort: "low"`)
	agentTemp, _ := keys(`agent: agents.claudeCode & {temperature: 0}`, "")
	host, p := keys(`agent: agents.claudeCode & {upstreamEnv: "MY_PROXY_URL", auth: "bearer", headers: "X-Team": "MY_TEAM"}`, "")
	for id := range base {
		for name, other := range map[string]map[string]string{"temperature 0": zero, "temperature 0.5": half, "effort": effort, "agent temperature": agentTemp} {
			if other[id] == base[id] {
				t.Errorf("%s: %s leaves the rollout key as it was", id, name)
			}
		}
		if zero[id] == half[id] || zero[id] == agentTemp[id] {
			t.Errorf("%s: temperatures share a key", id)
		}
		if host[id] != base[id] {
			t.Errorf("%s: the host's connection settings moved the rollout key", id)
		}
	}
	_, jp := keys(`agent: agents.claudeCode & {auth: "bearer", headers: "X-Team": "MY_TEAM"}
	judge: {provider: "anthropic", model: "m"}`, "")
	if j := jp.Judge; j == nil || j.Auth != "bearer" || j.Headers["X-Team"] != "MY_TEAM" || j.CredentialEnv != "ANTHROPIC_API_KEY" || j.UpstreamEnv != "ANTHROPIC_BASE_URL" {
		t.Errorf("a judge of the agent's provider: %+v", jp.Judge)
	}
	_, jp = keys(`agent: agents.claudeCode & {auth: "bearer", headers: "X-Team": "MY_TEAM"}
	judge: {provider: "openai", model: "m"}`, "")
	if j := jp.Judge; j == nil || j.Auth != "bearer" || len(j.Headers) != 0 || j.CredentialEnv != "OPENAI_API_KEY" || j.UpstreamEnv != "OPENAI_BASE_URL" || j.UpstreamDefault != "https://api.openai.com" {
		t.Errorf("a judge of another provider: %+v", jp.Judge)
	}
	if p.Agent.Auth != "bearer" || p.Agent.Headers["X-Team"] != "MY_TEAM" || p.Agent.UpstreamDefault != "https://api.anthropic.com" {
		t.Errorf("agent %+v", p.Agent.Agent)
	}
}
