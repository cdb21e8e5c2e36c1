package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/verdict"
)

// describeVerdict is the verdict's summary for the terminal.
func describeVerdict(r *verdict.Report, out string) string {
	var b strings.Builder
	if r.StandIn != "" {
		fmt.Fprintf(&b, "note: the agent is a %s\n", r.StandIn)
	}
	fmt.Fprintf(&b, "verdict: %s (exit %d)\n", r.Verdict.Verdict, r.Verdict.ExitCode)
	for _, s := range r.Verdict.Reasons {
		if slices.Contains(r.Verdict.NotFailing, s) {
			s += " (does not fail the verdict)"
		}
		fmt.Fprintf(&b, "  %s\n", s)
	}
	for _, s := range r.Verdict.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", s)
	}
	for _, s := range r.Sequential.Lines() {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	if r.Root != "" {
		fmt.Fprintf(&b, "root: %s\n", r.Root)
	}
	fmt.Fprintf(&b, "reports: %s/report.html, report.md, verdict.json, junit.xml\n", out)
	return b.String()
}

// exitVerdict ends the command with the verdict's exit code.
func exitVerdict(r *verdict.Report) error {
	if r.Verdict.ExitCode == 0 {
		return nil
	}
	return exit(r.Verdict.ExitCode, nil)
}
