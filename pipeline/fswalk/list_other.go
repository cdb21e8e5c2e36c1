//go:build !linux

package fswalk

import (
	"os"
)

// list gives dir's folders and symlinks in name order.
func list(dir string) ([]entry, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []entry
	for _, e := range es {
		if typ := e.Type(); typ != 0 {
			out = append(out, entry{name: e.Name(), typ: typ})
		}
	}
	return out, nil
}
