// Package schema embeds skillgate's CUE schema and presets, the single source
// of truth of the configuration language. Suites import it as ImportPath;
// skillgate serves it offline, and `skillgate schema` vendors it into a
// suite's cue.mod so plain cue and editors resolve it too.
package schema

import (
	"embed"
	"io/fs"
	"sort"
)

// ImportPath is the CUE import path of the schema package. The presets live
// below it, in ImportPath+"/agents" and ImportPath+"/policies", and the
// packages reading other systems' files in ImportPath+"/formats/NAME".
const ImportPath = "skillgate.dev/schema"

// LanguageVersion is the CUE language version written into module files.
const LanguageVersion = "v0.17.0"

//go:embed *.cue agents/*.cue policies/*.cue formats/*/*.cue
var files embed.FS

// Files returns the schema's CUE files by slash-separated path relative to
// the schema package folder, sorted.
func Files() map[string][]byte {
	out := map[string][]byte{}
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = b
		return nil
	})
	return out
}

// Paths returns the keys of Files in order.
func Paths() []string {
	var ps []string
	for p := range Files() {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}
