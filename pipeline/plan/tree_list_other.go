//go:build !(linux && (amd64 || arm64))

package plan

import "os"

// A listing is a folder's entries by name, as os.ReadDir gives them.
type listing struct{ entries []os.DirEntry }

// openList lists the folder p as os.ReadDir does, with its errors.
func openList(p string) (*listing, []os.DirEntry, error) {
	es, err := os.ReadDir(p)
	if err != nil {
		return nil, nil, err
	}
	return &listing{es}, es, nil
}

// lstat is the Lstat of the i-th entry, as its Info gives it.
func (l *listing) lstat(i int, _ string) (os.FileInfo, error) { return l.entries[i].Info() }

func (l *listing) close() {}
