// Package gstack reads gstack's skill-eval tasks (tasks.json, tasks.ext.json, tasks.lock.json) into suites.
package gstack

import "fmt"

// Import writes into out a suite naming the files at src, and returns the
// files written.
func Import(src, out string) ([]string, error) {
	return nil, fmt.Errorf("import %s: not supported yet", src)
}
