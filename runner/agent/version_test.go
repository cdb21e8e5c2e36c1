package agent

import (
	"path/filepath"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// TestPresetsNameTheBuiltVersions: the agent presets of schema/agents name
// the images skillgate builds by default, so the versions are written
// twice only with this test to keep them equal.
func TestPresetsNameTheBuiltVersions(t *testing.T) {
	for preset, kind := range map[string]string{"claudeCode": ClaudeCode, "codex": Codex, "openCode": OpenCode, "pi": Pi, "gemini": Gemini} {
		files := suitetest.Edit(t, "suite/suite.cue", `agents.command & {command: ["sh", "-c", "echo hi"]}`, "agents."+preset)
		root := suitetest.WriteSuite(t, files)
		s, err := suite.LoadSuite(filepath.Join(root, "suite"))
		if err != nil {
			t.Fatal(suite.PrintError(err, root))
		}
		if want := ImageRepo(kind) + ":" + Version(kind); s.Agent.Kind != kind || s.Agent.Image != want {
			t.Errorf("preset %s: kind %s, image %s; want %s, %s", preset, s.Agent.Kind, s.Agent.Image, kind, want)
		}
	}
}
