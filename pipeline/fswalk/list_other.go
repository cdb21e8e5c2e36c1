//go:build !linux

package fswalk

import (
	"io/fs"
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
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			out = append(out, entry{name: e.Name(), link: true})
		case e.IsDir():
			out = append(out, entry{name: e.Name()})
		}
	}
	return out, nil
}
