package report

import (
	"encoding/xml"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
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

// renderJUnit writes one testsuite per arm (CI test views group by suite,
// then by classname = case) with one testcase per cell, and a "policy"
// testsuite with one testcase per rule.
func renderJUnit(r *verdict.Report) ([]byte, error) {
	root := junitSuites{Name: "skillgate " + r.Suite}
	for _, arm := range reportArmNames(r) {
		s := junitSuite{Name: arm}
		if a := reportArm(r, arm); a != nil {
			s.Properties = []junitProperty{
				{"skills", strings.Join(a.Skills, ",")},
				{"activation", a.Activation},
			}
		}
		for _, c := range r.Cases {
			for _, t := range c.Trials[arm] {
				jc := junitCase{ClassName: c.ID, Name: cellName(c.ID, arm, t)}
				switch trialClass(t) {
				case "missing":
					jc.Skipped = &junitMessage{Message: "not run"}
				case "invalid":
					jc.Error = &junitMessage{Message: "invalid run", Type: t.Status}
				case "fail":
					jc.Failure = &junitMessage{Message: failSummary(t), Type: t.Status}
					if t.Status == grade.StatusCompleted {
						jc.Failure.Type = "checks"
					}
					if len(t.Failed) > 0 {
						jc.Failure.Text = strings.Join(t.Failed, "\n")
					}
				}
				if href := rolloutHref(t, "stdout.txt"); href != "" {
					jc.SystemOut = "transcript: " + href + "\nworkspace: " + rolloutHref(t, "workspace/")
				}
				s.add(jc)
			}
		}
		root.Suites = append(root.Suites, s)
	}
	pol := junitSuite{Name: "policy"}
	if r.Policy != "" {
		pol.Properties = []junitProperty{{"policy", r.Policy}, {"verdict", r.Verdict.Verdict}}
	}
	// The verdict's reasons, those of no rule too (cells not judged, and
	// why), so a CI view shows what made it.
	for _, reason := range r.Verdict.Reasons {
		pol.Properties = append(pol.Properties, junitProperty{"reason", reason})
	}
	for _, ro := range r.Verdict.Rules {
		jc := junitCase{ClassName: "policy", Name: ro.Rule}
		if !ro.Met {
			msg := strings.Join(ro.Reasons, "; ")
			if msg == "" {
				msg = "not met"
			}
			jc.Failure = &junitMessage{Message: msg, Type: ro.Severity, Text: ro.Detail}
		}
		var out []string
		if ro.Met && ro.Detail != "" {
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
	root.Suites = append(root.Suites, pol)
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
