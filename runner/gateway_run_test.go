package runner

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skillgate/skillgate/pipeline"
)

// gatewaySuite writes a suite whose command agent calls its model through
// the gateway with wget, then prints its environment.
func gatewaySuite(t *testing.T, agent string, cases int) (string, *pipeline.Plan) {
	t.Helper()
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, ".git"), 0o755)
	dir := filepath.Join(root, "s")
	os.MkdirAll(filepath.Join(dir, "skill"), 0o755)
	os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte("---\nname: s\ndescription: A test skill.\n---\n"), 0o644)
	var cs strings.Builder
	for i := 0; i < cases; i++ {
		cs.WriteString("\t\t\"c" + string(rune('a'+i)) + "\": {prompt: \"p" + string(rune('a'+i)) + "\"}\n")
	}
	suite := `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "runtest-gateway"
	skills: s: path: "skill"
	agent: agents.command & {
		` + agent + `
		command: ["sh", "-c", "wget -q -O- --header \"x-api-key: $SKILLGATE_MODEL_KEY\" --header 'content-type: application/json' --post-data '{\"model\":\"m\",\"max_tokens\":10,\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}' $SKILLGATE_MODEL_URL/v1/messages; echo; env >&2"]
	}
	trials: 1
	redactEnv: ["SKILLGATE_TEST_SECRET"]
	arms: none: {}
	cases: {
` + cs.String() + `	}
	policy: policies.advisory
}
`
	os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(suite), 0o644)
	p, err := pipeline.CompileDir(dir)
	if err != nil {
		t.Fatal(pipeline.PrintError(err, root))
	}
	return dir, p
}

// TestRunThroughGatewayKeepsCredentialOut runs cells whose model is a real
// (local) upstream: the upstream sees the host's real key, while no cell and
// no stored file ever holds it.
func TestRunThroughGatewayKeepsCredentialOut(t *testing.T) {
	testEngine(t)
	canary := "sk-canary-" + newRunID()
	secret := "secret-" + newRunID()
	t.Setenv("SKILLGATE_TEST_KEY", canary)
	t.Setenv("SKILLGATE_TEST_SECRET", secret)
	var mu sync.Mutex
	var keys []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get("x-api-key"))
		mu.Unlock()
		w.Header().Set("content-type", "application/json")
		// The upstream echoes the configured secret: it must be redacted.
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m-answered","content":[{"type":"text","text":"hello `+secret+`"}],"stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":3}}`)
	}))
	defer upstream.Close()
	dir, p := gatewaySuite(t, `provider: "anthropic", upstream: "`+upstream.URL+`", credentialEnv: "SKILLGATE_TEST_KEY"`, 2)
	out := t.TempDir()
	sum, err := Run(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Complete() {
		t.Fatalf("summary %+v", sum)
	}
	if len(keys) != 2 || keys[0] != canary || keys[1] != canary {
		t.Errorf("upstream saw keys %q, want the real key twice", keys)
	}
	for _, c := range p.Cells {
		ro, _, _ := (&Store{Dir: out}).Rollout(c.Rollout)
		if ro.Gateway == nil || ro.Gateway.Requests != 1 || ro.Gateway.ModelAnswered != "m-answered" || ro.Gateway.Tokens == nil || ro.Gateway.Tokens.Input != 7 {
			t.Errorf("%s: gateway usage %+v", c.ID, ro.Gateway)
		}
		if !strings.Contains(ro.Answer, "hello "+Redacted) {
			t.Errorf("%s: answer %q: want the secret redacted", c.ID, ro.Answer)
		}
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, s := range []string{canary, secret} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds a secret", p)
			}
		}
		return nil
	})
	// The cell saw only its dummy key.
	stderr := readStored(t, out, p.Cells[0], FileStderr)
	if !strings.Contains(stderr, "SKILLGATE_MODEL_KEY=sk-skillgate-") || strings.Contains(stderr, canary) {
		t.Errorf("cell environment:\n%s", stderr)
	}
}

// TestSpendCapStopsAndResumes caps a run below what its cells cost: it
// stops starting cells, is incomplete, and a run with a higher cap finishes
// only what is left.
func TestSpendCapStopsAndResumes(t *testing.T) {
	testEngine(t)
	dir, p := gatewaySuite(t, `provider: "scripted", script: rules: [{reply: [{text: "ok"}], usage: {input: 1000000, output: 0}}], prices: inputPerMTok: 1`, 4)
	out := t.TempDir()
	sum, err := Run(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 1, SpendCapUSD: 2.5})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.SpendCapReached || sum.Complete() || sum.Ran == 0 || sum.Ran >= 4 {
		t.Fatalf("capped run: %+v", sum)
	}
	if sum.SpentUSD > 2.5 {
		t.Errorf("spent $%.2f past the $2.50 cap", sum.SpentUSD)
	}
	first := sum.Ran
	sum, err = Run(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 1, SpendCapUSD: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Complete() || sum.Ran != 4-first || sum.Reused != first {
		t.Fatalf("resumed run: %+v (first ran %d)", sum, first)
	}
}
