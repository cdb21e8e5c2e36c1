package suite

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"regexp/syntax"
	"strings"
)

// compileRE2 compiles a regular expression as skillgate matches it, and
// says what went wrong in the terms of RE2, the syntax of Go's regexp.
func compileRE2(re string) error {
	_, err := regexp.Compile(re)
	if err == nil {
		return nil
	}
	why := err.Error()
	var se *syntax.Error
	if errors.As(err, &se) {
		why = se.Code.String()
		if se.Expr != "" && se.Expr != re {
			why += " at `" + se.Expr + "`"
		}
	}
	for _, look := range []string{"(?=", "(?!", "(?<=", "(?<!"} {
		if strings.Contains(re, look) {
			return fmt.Errorf("invalid regular expression %q: it uses lookaround (%s...), which RE2, the syntax of Go's regexp that skillgate reads, does not have", re, look)
		}
	}
	return fmt.Errorf("invalid regular expression %q: %s (RE2 syntax, as Go's regexp reads it: no lookaround, no backreferences)", re, why)
}

// checkGlob refuses an allowed-writes glob that can never match a changed
// file's path (relative, slash-separated, clean), and says what to write.
func checkGlob(g string) error {
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("invalid glob %q: %v", g, err)
	}
	switch {
	case strings.Trim(g, "/") == "":
		return fmt.Errorf("glob %q matches no file: name the files the agent may write, such as \"CHANGELOG.md\" or \"docs/**\" for a folder, or leave writes out to allow any change", g)
	case strings.HasSuffix(g, "/"):
		dir := strings.TrimRight(g, "/")
		return fmt.Errorf("glob %q matches no file: a trailing slash matches no file path; write %q for everything in the folder", g, cleanGlob(dir)+"/**")
	case strings.HasPrefix(g, "/"):
		return fmt.Errorf("glob %q matches no file: paths are relative to the workspace; write %q", g, cleanGlob(g))
	}
	for _, el := range strings.Split(g, "/") {
		switch el {
		case "":
			return fmt.Errorf("glob %q matches no file: it has an empty path element (//); write %q", g, cleanGlob(g))
		case ".", "..":
			return fmt.Errorf("glob %q matches no file: paths are clean, without %s elements; write %q", g, el, cleanGlob(g))
		}
	}
	return nil
}

// cleanGlob is g made relative and clean.
func cleanGlob(g string) string {
	c := strings.TrimPrefix(path.Clean("/"+g), "/")
	if c == "" {
		return "**"
	}
	return c
}
