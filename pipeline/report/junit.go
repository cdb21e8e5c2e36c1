package report

import (
	"encoding/xml"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/runfolder"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func (s *junitSuite) add(c junitCase) {
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Error != nil:
		s.Errors++
	case c.Skipped != nil:
		s.Skipped++
	}
	s.Cases = append(s.Cases, c)
}

// renderJUnit writes junit.xml so a CI test view agrees with the verdict: a "policy"
// testsuite first, one testcase per rule, failing only where an unmet fail-severity rule
// fails the verdict (an unmet warn rule passes with its warning, a rule that could not be
// measured is skipped); then a "cells" testsuite, one testcase per cell (classname = case),
// where a failed or invalid cell is a failure only when a failing rule names it. A baseline
// arm's expected failures, or a trial the policy tolerates, pass with their outcome in
// system-out. A PASS run's junit.xml therefore has no failure.
func renderJUnit(r *verdict.Report) ([]byte, error) {
	root := junitSuites{Name: "skillgate " + r.Suite}
	pol := junitSuite{Name: "policy"}
	if r.Policy != "" {
		pol.Properties = []junitProperty{{"policy", r.Policy}, {"verdict", r.Verdict.Verdict}}
	}
	blamed := map[string][]string{} // cell -> the failing findings naming it
	for _, ro := range r.Verdict.Rules {
		jc := junitCase{ClassName: "policy", Name: ro.Rule}
		var out []string
		switch {
		case ro.NotMeasured != "":
			jc.Skipped = &junitMessage{Message: "not measured: " + ro.NotMeasured}
		case !ro.Met && ro.Severity == verdict.SeverityFail:
			var texts []string
			for _, f := range ro.Findings {
				texts = append(texts, f.Text)
				for _, c := range f.Cells {
					blamed[c] = append(blamed[c], f.Reason)
				}
			}
			msg := strings.Join(ro.Reasons, "; ")
			if msg == "" {
				msg = "not met"
			}
			jc.Failure = &junitMessage{Message: msg, Type: ro.Severity, Text: strings.Join(append(texts, ro.Detail), "\n")}
		case !ro.Met:
			for _, f := range ro.Findings {
				out = append(out, "warning: "+f.Text)
			}
			if len(ro.Findings) == 0 {
				for _, w := range ro.Reasons {
					out = append(out, "warning: "+w)
				}
			}
		}
		if ro.Detail != "" && jc.Failure == nil {
			out = append(out, ro.Detail)
		}
		for _, f := range ro.Flags {
			out = append(out, "flag: "+f)
		}
		for _, w := range ro.Warnings {
			out = append(out, "warning: "+w)
		}
		jc.SystemOut = strings.Join(out, "\n")
		pol.add(jc)
	}
	// What keeps a verdict INCOMPLETE belongs to no rule (cells not run, not judged), so
	// it stands as its own testcase, an error: the run did not measure what it set out to.
	if r.Verdict.Verdict == verdict.VerdictIncomplete {
		pol.add(junitCase{ClassName: "policy", Name: "complete", Error: &junitMessage{
			Message: "INCOMPLETE: " + strings.Join(failingReasons(r.Verdict), "; "), Type: "incomplete",
			Text: incompleteTexts(r),
		}})
	}
	root.Suites = append(root.Suites, pol)

	cells := junitSuite{Name: "cells"}
	for _, c := range r.Cases {
		for _, arm := range reportArmNames(r) {
			for _, t := range c.Trials[arm] {
				jc := junitCase{ClassName: c.ID, Name: cellName(c.ID, arm, t)}
				var out []string
				class := trialClass(t)
				switch class {
				case "missing":
					jc.Skipped = &junitMessage{Message: "not run"}
				case "invalid", "fail":
					msg := failSummary(t)
					if class == "invalid" {
						msg = "invalid run: " + t.Status
					}
					if why := blamed[t.Cell]; len(why) > 0 {
						jc.Failure = &junitMessage{Message: msg, Type: strings.Join(why, "; "), Text: strings.Join(t.Failed, "\n")}
					} else {
						out = append(out, msg+" (no failing rule counts it: "+toleratedBy(r, arm)+")")
						for _, f := range t.Failed {
							out = append(out, "failed check: "+f)
						}
					}
				}
				if href := rolloutHref(t, runfolder.FileStdout); href != "" {
					out = append(out, "view: "+FileReportHTML+cellHref(t.Cell), "transcript: "+href, "rollout: "+rolloutHref(t, runfolder.FileRollout))
				}
				jc.SystemOut = strings.Join(out, "\n")
				cells.add(jc)
			}
		}
	}
	root.Suites = append(root.Suites, cells)
	for _, s := range root.Suites {
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Errors += s.Errors
		root.Skipped += s.Skipped
	}
	b, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(append([]byte(xml.Header), b...), '\n'), nil
}

// toleratedBy says why a failed cell fails no test: its arm is a baseline, or the policy's
// thresholds allow it.
func toleratedBy(r *verdict.Report, arm string) string {
	if a := reportArm(r, arm); a != nil && len(a.Skills) == 0 {
		return "a baseline arm, expected to fail where the skill helps"
	}
	return "within the policy's thresholds"
}

// failingReasons are the verdict's reasons but those that fail nothing.
func failingReasons(v verdict.Verdict) []string {
	var out []string
	for _, reason := range v.Reasons {
		if !slices.Contains(v.NotFailing, reason) {
			out = append(out, reason)
		}
	}
	return out
}

func incompleteTexts(r *verdict.Report) string {
	var out []string
	for _, reason := range r.Verdict.Reasons {
		if t := incompleteText(reason); t != "" {
			out = append(out, reason+": "+t)
		}
	}
	return strings.Join(out, "\n")
}
