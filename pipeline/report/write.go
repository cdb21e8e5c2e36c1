package report

import (
	"fmt"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// Report files in a run folder.
const (
	FileVerdictJSON = "verdict.json"
	FileReportJSON  = "report.json"
	FileReportMD    = "report.md"
	FileReportHTML  = "report.html"
	FileJUnitXML    = "junit.xml"
)

// WriteReports renders r into dir as verdict.json (gstack's shape),
// report.json, report.md, report.html and junit.xml. Every file is a pure
// function of r (the same Report gives the same bytes) and is written
// atomically; nothing is written unless every file renders.
func WriteReports(dir string, r *verdict.Report) error {
	return WriteReportsWith(dir, r, nil)
}

// WriteReportsWith is WriteReports with each cell's evidence, which report.html shows in
// the cell's own view; nil evidence gives views with the grade alone.
func WriteReportsWith(dir string, r *verdict.Report, ev *Evidence) error {
	if r == nil {
		return fmt.Errorf("write reports: no report")
	}
	renderers := []struct {
		name   string
		render func(*verdict.Report) ([]byte, error)
	}{
		{FileVerdictJSON, renderVerdictJSON},
		{FileReportJSON, renderReportJSON},
		{FileReportMD, renderReportMD},
		{FileReportHTML, func(r *verdict.Report) ([]byte, error) { return renderReportHTMLWith(r, ev) }},
		{FileJUnitXML, renderJUnit},
	}
	out := make([][]byte, len(renderers))
	for i, rd := range renderers {
		b, err := rd.render(r)
		if err != nil {
			return fmt.Errorf("render %s: %w", rd.name, err)
		}
		out[i] = b
	}
	for i, rd := range renderers {
		if err := pipeline.WriteFile(filepath.Join(dir, rd.name), out[i]); err != nil {
			return err
		}
	}
	return writeFormats(dir, r, ev)
}

// ---- report.json ----

// ---- verdict.json (gstack's skill eval contract) ----

// ---- junit.xml ----

// ---- helpers shared by the renderers ----
