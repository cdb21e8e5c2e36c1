package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/gateway/standin"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// standInCall is what one model call of the stand-in costs at spendSuite's
// prices: its Input tokens at $10/MTok and its Output tokens at $50/MTok.
const standInCall = (standin.Input*10 + standin.Output*50) / 1e6

// spendSuite writes a suite of one-trial cells whose command agent asks the
// stand-in up as many times as its case's prompt says: the first case once,
// the others six times (its prompt's first character), so the first cell's cost says nothing of the next
// ones'. Its prices are per token only: no per-call figure.
func spendSuite(t *testing.T, e *docker.Engine, up *standin.Server, cases int) runSuite {
	t.Helper()
	var cs strings.Builder
	for i := range cases {
		n := "6"
		if i == 0 {
			n = "1"
		}
		id := "c" + string(rune('a'+i))
		cs.WriteString("\t\t\"" + id + "\": {prompt: \"" + n + id + "\"}\n")
	}
	const ask = `wget -q -O- --header \"x-api-key: $SKILLGATE_MODEL_KEY\" --header 'content-type: application/json' --post-data '{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}' $SKILLGATE_MODEL_URL/v1/messages`
	root := writeRepo(t, map[string]string{
		"s/skill/SKILL.md": "---\nname: s\ndescription: A test skill.\n---\n",
		"s/suite.cue": `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "runtest-spendcap"
	skills: s: path: "skill"
	agent: agents.command & {
		provider:      "anthropic"
		upstream:      "` + up.URL + `"
		credentialEnv: "SKILLGATE_TEST_KEY"
		prices: {inputPerMTok: 10, outputPerMTok: 50}
		command: ["sh", "-c", "n=$(head -c1 $SKILLGATE_PROMPT_FILE); i=0; while [ $i -lt $n ]; do ` + ask + `; echo; i=$((i+1)); done"]
	}
	trials: 1
	arms: none: {}
	cases: {
` + cs.String() + `	}
	policy: uncovered: {}
}
`,
	})
	dir := filepath.Join(root, "s")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+p.Suite.Name) })
	return runSuite{Dir: dir, Plan: p}
}

// TestSpendCapIsACap: with prices that give no per-call figure, `--spend-cap
// 0.01` never lets the provider bill more than $0.01, one job or two: every
// model call is admitted by its bound before it is forwarded, so a session
// that would pass the cap is cut at the call that would, and is invalid for
// the cap; the report says which cells the cap cut or left unrun. A higher cap
// then finishes the run.
func TestSpendCapIsACap(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-test")
	up := standin.New(t, false)
	s := spendSuite(t, e, up, 6)
	for _, jobs := range []int{1, 2} {
		out := t.TempDir()
		before := up.Count("POST /v1/messages")
		sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: jobs, SpendCapUSD: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		calls := up.Count("POST /v1/messages") - before
		billed := float64(calls) * standInCall
		folder, _ := store.FolderSpend(out)
		t.Logf("--jobs %d: %d calls, billed $%.4f, ledger $%.4f, %d ran", jobs, calls, billed, folder, sum.Ran)
		if billed > 0.01+1e-9 || folder > 0.01+1e-9 || calls < 2 {
			t.Errorf("--jobs %d: %d calls billed $%.4f, ledger $%.4f: want at most $0.01 (and some calls)", jobs, calls, billed, folder)
		}
		if !sum.SpendCapReached || sum.Complete() {
			t.Errorf("--jobs %d: summary %+v, want the cap reached", jobs, sum)
		}
		if why := strings.Join(rep.Verdict.Reasons, "\n"); !strings.Contains(why, "spend cap") || strings.Contains(why, "INVALID") {
			t.Errorf("--jobs %d: verdict %s: %s; want the cap named, no cell called invalid", jobs, rep.Verdict.Verdict, why)
		}
		if jobs == 2 {
			continue
		}
		sum, err = Run(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, SpendCapUSD: 1})
		if err != nil || !sum.Complete() {
			t.Fatalf("under a higher cap: %+v %v", sum, err)
		}
	}
}
