package grade

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/skillgate/skillgate/pipeline/suite"
)

var (
	bulletBreak  = regexp.MustCompile(`\A(?:##[ \t]|<details>)`)
	bulletRule   = regexp.MustCompile(`\A[ \t]*(?:-{3,}|_{3,}|\*{3,})[ \t]*\z`)
	bulletBlock  = regexp.MustCompile(`\A( {0,3})(?:>|#{1,6}[ \t]+)`)
	bulletMarker = regexp.MustCompile(`\A( {0,3})([-+*]|\p{Nd}+[.)])([ \t]+)`)
)

// MarkdownBullets returns the visible top-level bullets of the section
// headed `## heading` in md, each with the lines that continue it joined
// by "\n", up to the next `## ` heading or `<details>` line.
func MarkdownBullets(md, heading string) []string {
	lines := pyLines(md, false)
	visible := maskLinkTitles(maskInlineCode(maskInlineTags(maskHTMLCode(maskHTMLComments(maskFencedCode(md))))))
	visibleLines := pyLines(visible, false)
	head := regexp.MustCompile(`\A##[ \t]+` + regexp.QuoteMeta(heading) + `[ \t]*\z`)

	var bullets, current []string
	contentIndent := 0
	var itemIndents [][2]int
	inSection, afterBlank, inIndentedCode := false, false, false
	finish := func() {
		if len(current) > 0 {
			bullets = append(bullets, strings.Join(current, "\n"))
			current = nil
		}
	}
	for i := 0; i < len(lines) && i < len(visibleLines); i++ {
		original, vis := lines[i], visibleLines[i]
		if !inSection {
			inSection = head.MatchString(vis)
			continue
		}
		if bulletBreak.MatchString(vis) {
			finish()
			break
		}
		if bulletRule.MatchString(vis) {
			finish()
			continue
		}
		if b := bulletBlock.FindStringSubmatch(vis); b != nil && len(current) > 0 && len(b[1]) < contentIndent {
			finish()
			continue
		}
		if m := bulletMarker.FindStringSubmatch(vis); m != nil {
			indent := len(m[1])
			markerContent := indent + utf8.RuneCountInString(m[2]) + utf8.RuneCountInString(m[3])
			if len(current) > 0 && indent >= contentIndent {
				current = append(current, vis)
				for len(itemIndents) > 1 && indent <= itemIndents[len(itemIndents)-1][0] {
					itemIndents = itemIndents[:len(itemIndents)-1]
				}
				itemIndents = append(itemIndents, [2]int{indent, markerContent})
			} else {
				finish()
				current = append(current, vis)
				contentIndent = markerContent
				itemIndents = [][2]int{{indent, contentIndent}}
			}
			afterBlank, inIndentedCode = false, false
			continue
		}
		if len(current) == 0 {
			continue
		}
		if pyStrip(vis) == "" {
			if pyStrip(original) != "" && !strings.HasPrefix(original, "  ") && !strings.HasPrefix(original, "\t") {
				finish()
			} else if pyStrip(original) == "" {
				afterBlank = true
			}
			continue
		}
		rest := strings.TrimLeft(vis, " \t")
		lineIndent := expandTabs(vis[:len(vis)-len(rest)])
		for len(itemIndents) > 1 && lineIndent < itemIndents[len(itemIndents)-1][1] {
			itemIndents = itemIndents[:len(itemIndents)-1]
		}
		codeIndent := itemIndents[len(itemIndents)-1][1] + 4
		if lineIndent >= codeIndent && (afterBlank || inIndentedCode) {
			current = append(current, "")
			inIndentedCode, afterBlank = true, false
			continue
		}
		inIndentedCode = false
		if afterBlank && !strings.HasPrefix(vis, "  ") && !strings.HasPrefix(vis, "\t") {
			finish()
			continue
		}
		current = append(current, vis)
		afterBlank = false
	}
	finish()
	return bullets
}

// expandTabs is the width of a run of spaces and tabs with tab stops
// every 4 columns (Python's expandtabs(4)).
func expandTabs(lead string) int {
	col := 0
	for _, c := range lead {
		if c == '\t' {
			col += 4 - col%4
		} else {
			col++
		}
	}
	return col
}

// VisibleLink reports whether re matches in text somewhere not escaped by
// an odd number of backslashes and not starting an image (`![`).
func VisibleLink(text string, re *regexp.Regexp) bool {
	for _, m := range re.FindAllStringIndex(text, -1) {
		start := m[0]
		esc := 0
		for start-esc-1 >= 0 && text[start-esc-1] == '\\' {
			esc++
		}
		if esc%2 == 1 {
			continue
		}
		prefix := start - esc - 1
		if prefix >= 0 && text[prefix] == '!' {
			imgEsc := 0
			for prefix-imgEsc-1 >= 0 && text[prefix-imgEsc-1] == '\\' {
				imgEsc++
			}
			if imgEsc%2 == 0 {
				continue
			}
		}
		return true
	}
	return false
}

// bulletsHold reports whether some bullet of md's section matches every
// expression of bc.Matches and links to each of bc.Links.
func bulletsHold(md string, bc suite.BulletCheck) (bool, string) {
	bullets := MarkdownBullets(md, bc.Heading)
	for _, b := range bullets {
		ok := true
		for _, p := range bc.Matches {
			if !regexp.MustCompile(p).MatchString(b) { // compiled by vet
				ok = false
				break
			}
		}
		for _, p := range bc.Links {
			if ok && !VisibleLink(b, regexp.MustCompile(p)) {
				ok = false
			}
		}
		if ok {
			return true, ""
		}
	}
	if len(bullets) == 0 {
		return false, fmt.Sprintf("no bullet under ## %s", bc.Heading)
	}
	return false, fmt.Sprintf("none of the %d bullets under ## %s fits", len(bullets), bc.Heading)
}
