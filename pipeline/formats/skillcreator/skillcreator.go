// Package skillcreator reads Anthropic's skill-creator evals and trigger eval sets into suites.
package skillcreator

import "fmt"

// Import writes into out a suite naming the files at src, and returns the
// files written.
func Import(src, out string) ([]string, error) {
	return nil, fmt.Errorf("import %s: not supported yet", src)
}
