package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// embedDecode is how CUE's @embed words a file it could not decode, with
// the line its decoder (JSON, YAML) names.
var embedDecode = regexp.MustCompile(`failed to decode file: (.+?):(\d+): (.*)$`)

// yamlContext are the YAML parser's problems that it reports at the line of
// the collection it was in (not its scanner's, which name their own line).
var yamlContext = regexp.MustCompile(`^did not find expected (?:<document start>|node content|key|'-' indicator|',' or '\]'|',' or '\}')$`)

// atEmbeddedFile positions an @embed error that names a line of the file
// it could not decode at that line of that file, the user's, rather than
// at the @embed attribute of the suite that reads it; nil for any other
// error.
func atEmbeddedFile(e cueerrors.Error) cueerrors.Error {
	m := embedDecode.FindStringSubmatch(message(e))
	at := e.Position()
	if m == nil || !at.IsValid() {
		return nil
	}
	path := m[1]
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(at.Filename()), filepath.FromSlash(path))
	}
	src, err := os.ReadFile(path)
	line, lerr := strconv.Atoi(m[2])
	if err != nil || lerr != nil || line < 1 {
		return nil
	}
	if yamlContext.MatchString(m[3]) {
		// The YAML decoder names, for these, the line before the block or
		// flow collection it was parsing (a zero-based line): one on.
		line++
	}
	f := token.NewFile(m[1], -1, len(src))
	f.SetLinesForContent(src)
	off, n := 0, 1
	for off < len(src) && n < line {
		if src[off] == '\n' {
			n++
		}
		off++
	}
	return &suiteError{path: e.Path(), pos: []token.Pos{f.Pos(off, token.NoRelPos)}, msg: fmt.Sprintf("read %s: %s", m[1], m[3])}
}

// message is an error's whole text but its path: CUE's wrapped errors
// (an @embed that failed) say in Msg only their first part.
func message(e cueerrors.Error) string {
	format, args := e.Msg()
	msg := fmt.Sprintf(format, args...)
	if len(e.Path()) == 0 && len(e.Error()) > len(msg) {
		return e.Error()
	}
	return msg
}
