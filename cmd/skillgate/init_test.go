package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/docker"

	"github.com/skillgate/skillgate/pipeline"
)

// TestInitThenRunPasses scaffolds a suite into a fresh repository, as a new
// user would, and runs it for real (Docker, the stand-in agent in the
// busybox sandbox): the first run must PASS, for a stub skill and for the
// user's own skill folders, which stay untouched, and git must see no run
// folder.
func TestInitThenRunPasses(t *testing.T) {
	engine, err := docker.NewEngine(context.Background())
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and there is no Docker engine: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
	defer engine.Close()
	changelog, err := os.ReadFile("../../skills/changelog/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	categories, err := os.ReadFile("../../skills/changelog/references/categories.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		skill map[string]string // the user's skill folder, by path in the repository
		args  []string
		suite string
	}{
		{name: "init-stub-run", args: []string{"init", "init-stub-run"}, suite: "init-stub-run"},
		{
			// The repository's own public skill, as a user's.
			name:  "init-skill-run",
			skill: map[string]string{"skills/changelog/SKILL.md": string(changelog), "skills/changelog/references/categories.md": string(categories)},
			args:  []string{"init", "--skill", "skills/changelog", "suites/init-skill-run"},
			suite: "suites/init-skill-run",
		},
		{
			// A description folded over lines, as YAML allows.
			name:  "init-folded-run",
			skill: map[string]string{"tools/pdf-forms/SKILL.md": "---\nname: pdf-forms\ndescription: >-\n  Fill in PDF forms from a JSON file of field values.\n  Use when asked to complete, fill or check a PDF form.\n---\n\n# PDF forms\n"},
			args:  []string{"init", "suites/init-folded-run", "--skill", "tools/pdf-forms"},
			suite: "suites/init-folded-run",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			t.Chdir(repo)
			if out, err := exec.Command("git", "init", "-q").CombinedOutput(); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			before := map[string]string{}
			for p, body := range tc.skill {
				if err := pipeline.WriteFile(filepath.FromSlash(p), []byte(body)); err != nil {
					t.Fatal(err)
				}
				before[p] = body
			}
			t.Cleanup(func() { engine.RemoveImages(context.Background(), docker.LabelSuite+"="+tc.name) })
			if code := run(append([]string{"skillgate"}, tc.args...)); code != 0 {
				t.Fatalf("skillgate %s: exit %d", strings.Join(tc.args, " "), code)
			}
			suite := tc.suite
			if code := run([]string{"skillgate", "run", suite}); code != 0 {
				t.Fatalf("skillgate run %s: exit %d, want 0 (PASS) on the first run", suite, code)
			}
			var verdict struct {
				Verdict string `json:"verdict"`
			}
			b, err := os.ReadFile(filepath.Join(".skillgate", tc.name, "verdict.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &verdict); err != nil || verdict.Verdict != "PASS" {
				t.Fatalf("verdict.json: %s (%v)", b, err)
			}
			md, err := os.ReadFile(filepath.Join(".skillgate", tc.name, "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(md), "**Stand-in run:**") {
				t.Errorf("report.md does not label the stand-in:\n%s", md)
			}
			for p, body := range before {
				if got, err := os.ReadFile(filepath.FromSlash(p)); err != nil || string(got) != body {
					t.Errorf("the skill's %s changed: %v", p, err)
				}
			}
			// The run folders are ignored; only the suite (and the user's
			// skill) are new to git.
			status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=all").Output()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(status)), "\n") {
				if strings.Contains(line, ".skillgate/") {
					t.Errorf("git sees a run folder file: %s", line)
				}
			}
			// A second run reruns nothing and passes again.
			if code := run([]string{"skillgate", "run", suite}); code != 0 {
				t.Fatalf("second run: exit %d", code)
			}
		})
	}
}
