package checks

import (
	"strings"
	"testing"
)

// TestCalibrateQuotableLine's part on the line a skill check quotes: the
// line only this arm's copy of the skill holds, and the quote found in an
// answer whatever its markup.
func TestQuotableLine(t *testing.T) {
	lines := func(s string) []string { return strings.Split(s, "\n") }
	before := skillCopy{name: "s", digest: "sha256:1", lines: lines("---\nname: s\n---\n# s\n- Run `go test` first, always.\nShared line of four words.\n")}
	line, prefix, unique := quotableLine(lines("---\nname: s\n---\n# s\nShared line of four words.\n- Run `go vet` first, always.\n"), []skillCopy{before})
	if line != "- Run `go vet` first, always." || prefix != "- Run `go vet`" || !unique {
		t.Errorf("differing copies: %q, %q, %v", line, prefix, unique)
	}
	line, prefix, unique = quotableLine(before.lines, nil)
	if line != "- Run `go test` first, always." || prefix != "- Run `go test`" || unique {
		t.Errorf("one copy: %q, %q, %v", line, prefix, unique)
	}
	if line, prefix, _ = quotableLine(lines("---\nname: s\ndescription: only front matter here\n---\n"), nil); line != "name: s" || prefix != "name:" {
		t.Errorf("front matter only: %q, %q", line, prefix)
	}
	// A quote survives markup and spacing; a lookalike does not pass.
	if !containsLine("The line is: **Run `go vet`  first, always.**", "- Run `go vet` first, always.") ||
		containsLine("Run go vet first.", "- Run `go vet` first, always.") {
		t.Error("containsLine")
	}
}
