//go:build !linux && !darwin

package store

import "io/fs"

// StatOf is false where the system gives no inode or change time: every
// file is then hashed.
func StatOf(info fs.FileInfo) (FileStat, bool) { return FileStat{}, false }
