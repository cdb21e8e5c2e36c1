// Package runfolder names the files and folders of a run folder, each
// once: package runner/store writes them and package report links to them,
// and a pipeline stage may not import the runner. It holds names alone; the
// layout and what each part holds are described in package store's doc
// (runner/store), and the reports' own files are named in package report.
package runfolder
