//go:build !linux

package cache

import (
	"os"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// folderWatch watches nothing here: HashWatched is HashLive.
type folderWatch struct{ tree plan.Tree }

func startWatch(string) *folderWatch          { return nil }
func (*folderWatch) folder(string)            {}
func (*folderWatch) seen(string, os.FileInfo) {}
func (*folderWatch) settle() bool             { return false }
func (*folderWatch) unchanged() bool          { return false }
func (*folderWatch) sameRoot(string) bool     { return false }
func watchBudget() int                        { return 0 }
func (*folderWatch) size() int                { return 0 }
func (*folderWatch) close()                   {}
