package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst moves a command's flags before its arguments, so that
// `skillgate plan suites/demo -o plan.json` works as users expect (the cli
// package stops parsing flags at the first argument).
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var cmd *cli.Command
	at := 1
	for ; at < len(args); at++ {
		if cmd = app.Command(args[at]); cmd != nil {
			break
		}
		if !strings.HasPrefix(args[at], "-") {
			return args
		}
	}
	if cmd == nil {
		return args
	}
	// A subcommand's flags go before its arguments, after its name.
	if at+1 < len(args) {
		if sub := cmd.Command(args[at+1]); sub != nil {
			cmd, at = sub, at+1
		}
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	out := append([]string{}, args[:at+1]...)
	var flags, rest []string
	tail := args[at+1:]
	for i := 0; i < len(tail); i++ {
		a := tail[i]
		if a == "--" {
			rest = append(rest, tail[i:]...)
			break
		}
		name := strings.TrimLeft(a, "-")
		if !strings.HasPrefix(a, "-") || a == "-" || name == "" {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		if n, _, hasValue := strings.Cut(name, "="); !hasValue && takesValue[n] && i+1 < len(tail) {
			flags = append(flags, tail[i+1])
			i++
		}
	}
	return append(append(out, flags...), rest...)
}

// dashed is a flag name as typed: --name, or -n for one letter.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// closest is the candidate nearest to typo, for a "did you mean": one it
// starts, else one within an edit or two (a swap of neighbours is one),
// else "".
func closest(typo string, candidates []string) string {
	if len(typo) < 2 {
		return "" // a letter is too short to guess from
	}
	candidates = slices.DeleteFunc(slices.Clone(candidates), func(c string) bool { return len(c) < 2 })
	if len(typo) >= 3 {
		var starts []string
		for _, c := range candidates {
			if strings.HasPrefix(c, typo) {
				starts = append(starts, c)
			}
		}
		if len(starts) == 1 {
			return starts[0]
		}
	}
	best, bestD := "", 0
	limit := 1
	if len(typo) >= 5 {
		limit = 2
	}
	for _, c := range candidates {
		if d := editDistance(typo, c); d <= limit && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of neighbours each count one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
