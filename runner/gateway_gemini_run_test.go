package runner

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/cell"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/gateway/standin"
	"github.com/skillgate/skillgate/runner/store"
)

// TestRunThroughGeminiGatewayKeepsCredentialOut: a cell calls Gemini's
// generateContent through the gateway (provider gemini, the stand-in behind
// it), its dummy key in the key= query: the stand-in sees the host's real key
// in x-goog-api-key alone, in the preflight and the cell's call, while no
// cell and no stored file ever holds it.
func TestRunThroughGeminiGatewayKeepsCredentialOut(t *testing.T) {
	dockertest.Engine(t)
	canary := "AIza-canary-" + cell.NewRunID()
	t.Setenv("SKILLGATE_TEST_GEMINI_KEY", canary)
	up := standin.New(t, false)
	up.Reply("hello from gemini")
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, ".git"), 0o755)
	dir := filepath.Join(root, "s")
	os.MkdirAll(filepath.Join(dir, "skill"), 0o755)
	os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte("---\nname: s\ndescription: A test skill.\n---\n"), 0o644)
	src := `package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "runtest-gemini-gateway"
	skills: s: path: "skill"
	agent: agents.command & {
		provider: "gemini", upstream: "` + up.URL + `", credentialEnv: "SKILLGATE_TEST_GEMINI_KEY", auth: "x-goog-api-key"
		command: ["sh", "-c", "wget -q -O- --header 'content-type: application/json' --post-data '{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}' \"$SKILLGATE_MODEL_URL/v1beta/models/gemini-2.5-pro:generateContent?key=$SKILLGATE_MODEL_KEY\"; echo; env >&2"]
	}
	trials: 1
	arms: none: {}
	cases: c: prompt: "p"
	policy: policies.advisory
}
`
	os.WriteFile(filepath.Join(dir, "suite.cue"), []byte(src), 0o644)
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	out := t.TempDir()
	sum, err := Run(context.Background(), p, Options{Out: out, SuiteDir: dir, Jobs: 1})
	if err != nil || !sum.Complete() {
		t.Fatalf("run: %v, summary %+v", err, sum)
	}
	got := up.Received()
	if len(got) != 2 || got[0].Path != "/v1beta/models" || got[1].Path != "/v1beta/models/gemini-2.5-pro:generateContent" {
		t.Fatalf("the stand-in got %+v, want the preflight and one model call, no key in the query", got)
	}
	for _, r := range got {
		if r.Header.Get("X-Goog-Api-Key") != canary || r.Header.Get("Authorization") != "" {
			t.Errorf("%s: headers %v", r.Path, r.Header)
		}
	}
	c := p.Cells[0]
	ro, _, _ := (&store.Store{Dir: out}).Rollout(c.Rollout)
	if ro.Gateway == nil || ro.Gateway.Requests != 1 || ro.Gateway.ModelAnswered != "stand-in-model" || ro.Gateway.Tokens == nil ||
		ro.Gateway.Tokens.Input != standin.Input || !strings.Contains(ro.Answer, "hello from gemini") {
		t.Errorf("gateway usage %+v, answer %q", ro.Gateway, ro.Answer)
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the key", p)
		}
		return nil
	})
	if stderr := readStored(t, out, c, store.FileStderr); !strings.Contains(stderr, "SKILLGATE_MODEL_KEY=sk-skillgate-") || strings.Contains(stderr, canary) {
		t.Errorf("cell environment:\n%s", stderr)
	}
}
