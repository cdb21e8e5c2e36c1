package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html"
	"regexp"
	"slices"
	"strings"
)

// The page's own code and styles, as the template writes them: its one
// script, its style block and its style attributes. Data blocks
// (<script type="application/json">) are not run, so they need no hash.
var (
	cspScript    = regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	cspStyle     = regexp.MustCompile(`(?s)<style>(.*?)</style>`)
	cspStyleAttr = regexp.MustCompile(` style="([^"]*)"`)
)

// cspMetaAfter is where the policy goes: first thing in <head>, before any
// style or script it governs.
const cspMetaAfter = "<meta charset=\"utf-8\">\n"

// withCSP puts a strict Content-Security-Policy into the rendered page: no
// source at all by default, and only the page's own script, style block
// and style attributes, each by the hash of its text computed here, so the
// page works offline and anything else in it (markup the agent's text
// smuggled past escaping, a script added by hand later) is not run. Images
// are data: URIs only (the empty icon).
func withCSP(page []byte) []byte {
	hashes := func(re *regexp.Regexp, unescape bool) []string {
		var out []string
		for _, m := range re.FindAllSubmatch(page, -1) {
			text := string(m[1])
			if unescape {
				text = html.UnescapeString(text)
			}
			sum := sha256.Sum256([]byte(text))
			h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
		return out
	}
	scripts, styles, attrs := hashes(cspScript, false), hashes(cspStyle, false), hashes(cspStyleAttr, true)
	policy := []string{"default-src 'none'"}
	if len(scripts) > 0 {
		policy = append(policy, "script-src "+strings.Join(scripts, " "))
	}
	style := "style-src " + strings.Join(styles, " ")
	if len(attrs) > 0 {
		style += " 'unsafe-hashes' " + strings.Join(attrs, " ")
	}
	policy = append(policy, style, "img-src data:", "base-uri 'none'", "form-action 'none'")
	meta := `<meta http-equiv="Content-Security-Policy" content="` + strings.Join(policy, "; ") + "\">\n" // base64 hashes and keywords: nothing to escape
	i := bytes.Index(page, []byte(cspMetaAfter))
	if i < 0 {
		return page
	}
	at := i + len(cspMetaAfter)
	return append(append(append([]byte{}, page[:at]...), meta...), page[at:]...)
}
