package gateway

import (
	"slices"
	"testing"
)

// OpenCode and Pi list skills between <available_skills> tags, one <skill> each with its
// <name>; a name outside such a listing is not a listed skill.
func TestListedSkillsAvailableSkills(t *testing.T) {
	text := "Skills provide specialized instructions.\n<available_skills>\n  <skill>\n    <name>customize-opencode</name>\n    <description>d</description>\n  </skill>\n" +
		"  <skill>\n    <name>s</name>\n    <description>A test skill.</description>\n    <location>/workspace/.pi/skills/s/SKILL.md</location>\n  </skill>\n</available_skills>\n<name>elsewhere</name>"
	got := listedSkills(text)
	if !slices.Equal(got, []string{"customize-opencode", "s"}) {
		t.Errorf("listed %q", got)
	}
}
