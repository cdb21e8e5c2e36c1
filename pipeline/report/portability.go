package report

import (
	"strings"

	"github.com/skillgate/skillgate/pipeline/verdict"
)

// portabilityMarkdown is report.md's portability section: one table, an
// agent a row, and how the uplift's difference between agents was tested.
func portabilityMarkdown(pt *verdict.Portability) string {
	if pt == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Portability: does the uplift hold on every agent?\n\n")
	row := func(cells []string) {
		for i := range cells {
			cells[i] = mdText(cells[i])
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	row(append([]string{}, verdict.PortabilityHeader...))
	b.WriteString(strings.Repeat("| --- ", len(verdict.PortabilityHeader)) + "|\n")
	rows, note := verdict.PortabilityRows(pt)
	for _, r := range rows {
		row(r)
	}
	b.WriteString("\n" + mdText(note) + "\n\n")
	return b.String()
}

// htmlPortability is report.html's portability table.
type htmlPortability struct {
	Header []string
	Rows   [][]string
	Note   string
}

func portabilityHTML(pt *verdict.Portability) *htmlPortability {
	if pt == nil {
		return nil
	}
	rows, note := verdict.PortabilityRows(pt)
	return &htmlPortability{Header: verdict.PortabilityHeader, Rows: rows, Note: note}
}
