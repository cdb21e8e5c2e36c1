// Package fswalk visits the folders and symlinks of a tree without
// naming its plain files to anyone: on Linux it reads each folder's
// entries in one buffer and makes a string only of the names it gives, so
// checking the links of a 20,000-file fixture, or watching its folders,
// costs a few hundred system calls and no allocation per file.
package fswalk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Walk visits root and every folder below it, depth first, each folder's
// entries in name order: folder hears each folder's path before the
// folder is listed, link each symlink's path. A symlink is never followed;
// a root that is a symlink is given to link, one that is a plain file to
// neither. Either func may be nil. The first error, a listing's as an
// *fs.PathError or one a func returned, ends the walk and is returned,
// but SkipDir from folder, which leaves that folder unlisted. A folder
// removed between its parent's listing and its own is passed over.
func Walk(root string, folder, link func(path string) error) error {
	return WalkAll(root, Funcs{Folder: folder, Link: link})
}

// SkipDir, returned by a Folder func, has the walk leave that folder
// unlisted.
var SkipDir = fs.SkipDir

// Funcs are what WalkAll tells of each entry but plain files; any may be
// nil.
type Funcs struct {
	Folder, Link func(path string) error
	// Other hears of what is neither a plain file, a folder nor a
	// symlink (a fifo, a socket, a device), with its mode type.
	Other func(path string, typ fs.FileMode) error
}

// WalkAll is Walk telling fn.Other of the entries that are neither plain
// files, folders nor symlinks too.
func WalkAll(root string, fn Funcs) error {
	info, err := os.Lstat(root)
	if err != nil {
		return err
	}
	switch typ := info.Mode().Type(); {
	case typ == fs.ModeSymlink:
		if fn.Link != nil {
			return fn.Link(root)
		}
		return nil
	case typ == 0:
		return nil
	case typ != fs.ModeDir:
		if fn.Other != nil {
			return fn.Other(root, typ)
		}
		return nil
	}
	err = walk(filepath.Clean(root), fn)
	if err == SkipDir {
		return nil
	}
	return err
}

func walk(dir string, fn Funcs) error {
	if fn.Folder != nil {
		if err := fn.Folder(dir); err != nil {
			return err
		}
	}
	entries, err := list(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := dir + string(filepath.Separator) + e.name
		switch {
		case e.typ == fs.ModeSymlink:
			if fn.Link != nil {
				err = fn.Link(p)
			}
		case e.typ == fs.ModeDir:
			// A folder removed since its parent was listed holds nothing.
			if err = walk(p, fn); err == SkipDir || errors.Is(err, fs.ErrNotExist) && gone(p) {
				err = nil
			}
		case fn.Other != nil:
			err = fn.Other(p, e.typ)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// gone says whether nothing is at p any more.
func gone(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}

// entry is a folder, a symlink or another kind of entry (not a plain
// file) of a listed folder, with its mode type.
type entry struct {
	name string
	typ  fs.FileMode
}
