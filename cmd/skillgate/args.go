package main

import (
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
