package cache

import (
	"os"
	"path/filepath"
	"time"
)

// indexItems are the live folders' stat indexes as GC weighs them: used
// when last written or trusted (HashLive touches an index it trusts).
// Removing one needs no lock: a run reading it then hashes its folder in
// full, and a run writing one renames it into place whole.
func (c *Cache) indexItems() []gcItem {
	ents, _ := os.ReadDir(filepath.Join(c.Dir, DirIndex))
	var items []gcItem
	for _, d := range ents {
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		path := filepath.Join(c.Dir, DirIndex, d.Name())
		items = append(items, gcItem{index: true, bytes: info.Size(), used: info.ModTime(),
			lock:   func() (func(), error) { return func() {}, nil },
			remove: func() error { return ignoreGone(os.Remove(path)) },
		})
	}
	return items
}

// touchIndex marks an index trusted as it stood as used now, for GC.
func touchIndex(path string) {
	now := time.Now()
	os.Chtimes(path, now, now)
}

func ignoreGone(err error) error {
	if os.IsNotExist(err) {
		return nil
	}
	return err
}
