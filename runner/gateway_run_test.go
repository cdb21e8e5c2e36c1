package runner

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skillgate/skillgate/runner/cell"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/runner/redact"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// gatewaySuite writes a suite whose command agent calls its model through
// the gateway with wget, then prints its environment.
func gatewaySuite(t *testing.T, agent string, cases int) (string, *plan.Plan) {
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
	src := `package s

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
	os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(src), 0o644)
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	return dir, p
}

// TestRunThroughGatewayKeepsCredentialOut runs cells whose model is a real
// (local) upstream: the upstream sees the host's real key, while no cell and
// no stored file ever holds it.
func TestRunThroughGatewayKeepsCredentialOut(t *testing.T) {
	dockertest.Engine(t)
	canary := "sk-canary-" + cell.NewRunID()
	secret := "secret-" + cell.NewRunID()
	t.Setenv("SKILLGATE_TEST_KEY", canary)
	t.Setenv("SKILLGATE_TEST_SECRET", secret)
	var mu sync.Mutex
	var keys []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		keys = append(keys, r.Method+" "+r.URL.Path+" "+r.Header.Get("x-api-key"))
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
	// The preflight, then one model call per cell.
	if len(keys) != 3 || keys[0] != "GET /v1/models "+canary || keys[1] != "POST /v1/messages "+canary || keys[2] != keys[1] {
		t.Errorf("upstream saw %q, want the real key in the preflight and in each cell's call", keys)
	}
	for _, c := range p.Cells {
		ro, _, _ := (&store.Store{Dir: out}).Rollout(c.Rollout)
		if ro.Gateway == nil || ro.Gateway.Requests != 1 || ro.Gateway.ModelAnswered != "m-answered" || ro.Gateway.Tokens == nil || ro.Gateway.Tokens.Input != 7 {
			t.Errorf("%s: gateway usage %+v", c.ID, ro.Gateway)
		}
		if !strings.Contains(ro.Answer, "hello "+redact.Redacted) {
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
	stderr := readStored(t, out, p.Cells[0], store.FileStderr)
	if !strings.Contains(stderr, "SKILLGATE_MODEL_KEY=sk-skillgate-") || strings.Contains(stderr, canary) {
		t.Errorf("cell environment:\n%s", stderr)
	}
}

// TestSpendCapStopsAndResumes caps a run below what its cells cost: it
// stops starting cells, never passes the cap, and is incomplete; the cap is
// the run folder's, so running again under the same cap starts nothing, and
// only a higher cap finishes what is left. The ledger holds every cell.
func TestSpendCapStopsAndResumes(t *testing.T) {
	dockertest.Engine(t)
	dir, p := gatewaySuite(t, `provider: "scripted", script: rules: [{reply: [{text: "ok"}], usage: {input: 1000000, output: 0}}], prices: {inputPerMTok: 1, outputPerMTok: 1}`, 4)
	out := t.TempDir()
	run := func(capUSD float64) *Summary {
		t.Helper()
		sum, err := Run(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 2, SpendCapUSD: capUSD})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	// Each cell costs $1. The first runs alone (no cost known yet), then two
	// at once may not pass $2.50: one more starts.
	sum := run(2.5)
	if !sum.SpendCapReached || sum.Complete() || sum.Ran != 2 || sum.SpentUSD != 2 || sum.SpentFolderUSD != 2 {
		t.Fatalf("capped run: %+v", sum)
	}
	// The same cap again: the folder has spent $2 of it, another cell would pass it.
	sum = run(2.5)
	if !sum.SpendCapReached || sum.Ran != 0 || sum.Reused != 2 || sum.SpentFolderUSD != 2 {
		t.Fatalf("rerun under the same cap: %+v", sum)
	}
	sum = run(3.5)
	if !sum.SpendCapReached || sum.Ran != 1 || sum.SpentFolderUSD != 3 {
		t.Fatalf("a cap $1 higher: %+v", sum)
	}
	sum = run(10)
	if !sum.Complete() || sum.Ran != 1 || sum.Reused != 3 || sum.SpentUSD != 1 || sum.SpentFolderUSD != 4 {
		t.Fatalf("resumed run: %+v", sum)
	}
	paid := func() []store.SpendEntry {
		all, err := store.ReadSpend(out)
		if err != nil {
			t.Fatal(err)
		}
		var entries []store.SpendEntry
		for _, e := range all {
			if e.Refused == "" { // the cells the cap did not start are entered too
				entries = append(entries, e)
			}
		}
		return entries
	}
	entries := paid()
	if len(entries) != 4 {
		t.Fatalf("ledger %+v", entries)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if e.Kind != store.SpendCell || e.USD != 1 || e.Estimated || seen[e.ID] {
			t.Errorf("ledger entry %+v", e)
		}
		seen[e.ID] = true
	}

	// Calibration cells count under the same cap, in the same ledger: $4 are
	// spent, so a $4.50 cap leaves no room for one.
	if _, err := Calibrate(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 2, SpendCapUSD: 4.5}); !errors.Is(err, ErrCalibrationIncomplete) {
		t.Fatalf("calibration under a spent cap: %v", err)
	}
	cal, err := Calibrate(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 2, SpendCapUSD: 10})
	if err != nil || cal.Ran != 2 || cal.SpentUSD != 2 {
		t.Fatalf("calibration: %+v %v", cal, err)
	}
	if entries := paid(); len(entries) != 6 || entries[4].Kind != store.SpendCalibration || entries[5].Kind != store.SpendCalibration {
		t.Errorf("ledger after calibration %+v", entries)
	}
}
