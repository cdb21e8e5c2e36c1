// Package fswalk visits the folders and symlinks of a tree without
// naming its plain files to anyone: on Linux it reads each folder's
// entries in one buffer and makes a string only of the names it gives, so
// checking the links of a 20,000-file fixture, or watching its folders,
// costs a few hundred system calls and no allocation per file.
package fswalk

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Walk visits root and every folder below it, depth first, each folder's
// entries in name order: folder hears each folder's path before the
// folder is listed, link each symlink's path. A symlink is never followed;
// a root that is a symlink is given to link, one that is a plain file to
// neither. Either func may be nil. The first error, a listing's as an
// *fs.PathError or one a func returned, ends the walk and is returned.
func Walk(root string, folder, link func(path string) error) error {
	info, err := os.Lstat(root)
	if err != nil {
		return err
	}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		if link != nil {
			return link(root)
		}
		return nil
	case !info.IsDir():
		return nil
	}
	return walk(filepath.Clean(root), folder, link)
}

func walk(dir string, folder, link func(string) error) error {
	if folder != nil {
		if err := folder(dir); err != nil {
			return err
		}
	}
	entries, err := list(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := dir + string(filepath.Separator) + e.name
		if e.link {
			if link != nil {
				if err := link(p); err != nil {
					return err
				}
			}
			continue
		}
		if err := walk(p, folder, link); err != nil {
			return err
		}
	}
	return nil
}

// entry is a folder (link false) or a symlink of a listed folder.
type entry struct {
	name string
	link bool
}
