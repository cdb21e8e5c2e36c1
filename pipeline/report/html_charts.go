package report

// The figures of report.html: the metric chart (a Wilson interval per arm and metric)
// and the cost table.

import (
	"fmt"
	"math"
	"strings"

	"github.com/skillgate/skillgate/pipeline/verdict"
)

// Chart geometry, in SVG user units.
const (
	chartWidth     = 880
	chartLabelW    = 190
	chartPlotLeft  = 200
	chartPlotRight = 640
	chartRowH      = 20
	chartGroupHead = 24
	chartGroupGap  = 10
	chartAxisH     = 26
)

// buildChart lays out every rate metric as a group with one row per arm: a
// dot at the value and a whisker over its 95% interval on a 0–100% axis.
func buildChart(r *verdict.Report) *htmlChart {
	metrics := rateMetrics(r)
	if len(metrics) == 0 || len(r.Arms) == 0 {
		return nil
	}
	noRouting := noRoutingExpected(r)
	c := &htmlChart{Width: chartWidth, PlotLeft: chartPlotLeft, PlotRight: chartPlotRight}
	x := func(v float64) string {
		v = math.Max(0, math.Min(1, v))
		return fmt.Sprintf("%.1f", chartPlotLeft+v*(chartPlotRight-chartPlotLeft))
	}
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		c.Ticks = append(c.Ticks, htmlTick{X: x(t), Label: fmtPct(t)})
	}
	y := chartAxisH
	for _, name := range metrics {
		g := htmlGroup{Label: metricLabel(name), Name: name, BandY: y}
		y += chartGroupHead
		g.Y = y - 8
		for i, a := range r.Arms {
			p := htmlPoint{Arm: a.Name, Class: armClass(i), Y: y + chartRowH/2, TextY: y + chartRowH/2 + 4,
				CapTop: y + chartRowH/2 - 5, CapBottom: y + chartRowH/2 + 5}
			m, ok := a.Metrics[name]
			switch {
			case noRouting && (name == verdict.MetricSkillPrecision || name == verdict.MetricSkillRecall):
				p.Text = notApplicable
				p.Title = fmt.Sprintf("%s · %s: not applicable, no case expects a skill", a.Name, metricLabel(name))
			case ok:
				p.HasValue = true
				p.X = x(m.Value)
				p.Text = fmtPct(m.Value)
				if m.CI95 != nil {
					p.HasCI = true
					p.Lo, p.Hi = x(m.CI95[0]), x(m.CI95[1])
					p.Text += " " + ciText(m)
				}
				p.Text += fmt.Sprintf(" n=%d", m.Samples)
				p.Title = fmt.Sprintf("%s · %s: %s", a.Name, metricLabel(name), p.Text)
			default:
				p.Text = "not measured"
				p.Title = fmt.Sprintf("%s · %s: no applicable sample", a.Name, metricLabel(name))
			}
			g.Rows = append(g.Rows, p)
			y += chartRowH
		}
		g.BandH = y - g.BandY + 4
		c.Groups = append(c.Groups, g)
		y += chartGroupGap
	}
	c.AxisY = chartAxisH - 8
	c.Height = y
	return c
}

// costColumns are the cost metrics of the per-arm cost table.
var costColumns = []struct{ key, label, unit string }{
	{"turns", "turns", ""},
	{"tokensInput", "input tokens", ""},
	{"tokensOutput", "output tokens", ""},
	{"tokensCacheRead", "cache read", ""},
	{"tokensCacheWrite", "cache write", ""},
	{"agentSeconds", "agent time", "s"},
	{"usd", "cost", "usd"},
}

// buildCost is the per-arm cost table: means per cell, with each arm's
// ratio to the first arm, which is the signal (absolute figures include
// overhead every arm shares).
func buildCost(r *verdict.Report) htmlCost {
	c := htmlCost{}
	for _, a := range r.Arms {
		if _, ok := a.Cost["usd"]; ok {
			c.HasUSD = true
		}
	}
	var base *verdict.ArmReport
	if len(r.Arms) > 0 {
		base = &r.Arms[0]
		c.Base = base.Name
	}
	for _, col := range costColumns {
		if col.key == "usd" && !c.HasUSD {
			continue
		}
		c.Columns = append(c.Columns, col.label)
	}
	for i, a := range r.Arms {
		row := htmlCostRow{Arm: a.Name, Class: armClass(i)}
		for _, col := range costColumns {
			if col.key == "usd" && !c.HasUSD {
				continue
			}
			m, ok := a.Cost[col.key]
			if !ok {
				title := "not measured"
				if strings.HasPrefix(col.key, "tokens") || col.key == "usd" {
					title = "not reported by the provider"
				}
				row.Cells = append(row.Cells, htmlCostCell{Text: absentMark, Title: title, Absent: true})
				continue
			}
			cell := htmlCostCell{Text: fmtNum(m.Value), Title: fmt.Sprintf("mean over %d cells", m.Samples)}
			switch col.unit {
			case "s":
				cell.Text += " s"
			case "usd":
				cell.Text = fmtUSD(m.Value)
			}
			if i > 0 && base != nil {
				if bm, ok := base.Cost[col.key]; ok && bm.Value > 0 {
					cell.Ratio = fmt.Sprintf("%.2f×", m.Value/bm.Value)
				}
			}
			row.Cells = append(row.Cells, cell)
		}
		bytesCell := htmlCostCell{Text: fmtInt(a.SkillBytes), Title: "complete file bytes of the installed skills"}
		if i > 0 && base != nil && base.SkillBytes > 0 {
			bytesCell.Ratio = fmt.Sprintf("%.2f×", float64(a.SkillBytes)/float64(base.SkillBytes))
		}
		row.Cells = append(row.Cells, bytesCell)
		c.Rows = append(c.Rows, row)
	}
	c.Columns = append(c.Columns, "skill bytes")
	return c
}
