// Package report is the last stage: it renders a verdict's Report as
// verdict.json (gstack's shape), report.json, report.md, a self-contained
// report.html and junit.xml, one function per format, and writes them
// atomically. It imports the stages above it and adds no figure of its own.
package report
