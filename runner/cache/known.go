package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// A stat record (trees/HEX.stat for a snapshot, index/KEY for a live
// folder) lists files by path, each with the stat it had when its digest
// was last known: trusted for a file while a stat of it says exactly that
// (device, inode, size, mode, modification and change times in
// nanoseconds). Any edit of a file changes its change time, setting its
// modification time back included, so an edited file is hashed again. The
// record is text, one file a line, its first line naming what it records
// and its last the SHA-256 of the lines before it: a record damaged on
// disk is ignored, every file then hashed, never trusted.
//
//	skillgate-stats 1 HEAD
//	DIGEST DEV INO SIZE MODE MTIME CTIME PATH
//	sum HEX
const recordMagic = "skillgate-stats 1 "

// encodeRecord writes files under the header head (no newline in it).
// Paths with a newline or a tab are left out: they are hashed.
func encodeRecord(head string, files map[string]store.KnownFile) []byte {
	var b bytes.Buffer
	b.WriteString(recordMagic + head + "\n")
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if strings.ContainsAny(p, "\n\t") {
			continue
		}
		k := files[p]
		s := k.Stat
		fmt.Fprintf(&b, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", k.Digest, s.Dev, s.Ino, s.Size, s.Mode, s.Mtime, s.Ctime, p)
	}
	sum := sha256.Sum256(b.Bytes())
	b.WriteString("sum " + hex.EncodeToString(sum[:]) + "\n")
	return b.Bytes()
}

// decodeRecord reads a record written under head; nil when it is damaged,
// of another head, or absent.
func decodeRecord(b []byte, head string) map[string]store.KnownFile {
	if !bytes.HasPrefix(b, []byte(recordMagic+head+"\n")) {
		return nil
	}
	_, files := decodeAny(b)
	return files
}

// decodeAny reads a record and its head; nil files when it is damaged.
func decodeAny(b []byte) (head string, files map[string]store.KnownFile) {
	first, _, _ := bytes.Cut(b, []byte("\n"))
	head, ok := strings.CutPrefix(string(first), recordMagic)
	if !ok {
		return "", nil
	}
	return head, decodeBody(b)
}

func decodeBody(b []byte) map[string]store.KnownFile {
	i := bytes.LastIndex(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if i < 0 {
		return nil
	}
	body, tail := b[:i+1], strings.TrimSpace(string(b[i+1:]))
	sum := sha256.Sum256(body)
	if tail != "sum "+hex.EncodeToString(sum[:]) {
		return nil
	}
	text := strings.TrimSuffix(string(body), "\n")
	_, text, more := strings.Cut(text, "\n") // past the head
	out := make(map[string]store.KnownFile, strings.Count(text, "\n")+1)
	for more {
		var line string
		line, text, more = strings.Cut(text, "\n")
		p, k, ok := decodeLine(line)
		if !ok {
			return nil
		}
		out[p] = k
	}
	return out
}

// decodeLine reads a record's line: DIGEST DEV INO SIZE MODE MTIME CTIME
// PATH, tab-separated, the path all that follows the seventh tab.
func decodeLine(line string) (string, store.KnownFile, bool) {
	const dgLen = len("sha256:") + 64
	if len(line) <= dgLen || line[dgLen] != '\t' || !validSHA256(line[:dgLen]) {
		return "", store.KnownFile{}, false
	}
	dg, line := line[:dgLen], line[dgLen+1:]
	var n [6]int64
	for j := range n {
		var ok bool
		if n[j], line, ok = cutInt(line); !ok {
			return "", store.KnownFile{}, false
		}
	}
	return line, store.KnownFile{Digest: digest.Digest(dg), Stat: store.FileStat{
		Dev: uint64(n[0]), Ino: uint64(n[1]), Size: n[2], Mode: uint32(n[3]), Mtime: n[4], Ctime: n[5],
	}}, true
}

// cutInt reads the number before the first tab of line, as
// strconv.ParseInt reads it, and returns it with what follows the tab.
func cutInt(line string) (int64, string, bool) {
	var v uint64 // 19 digits fit
	for i := 0; i < len(line) && i <= 19; i++ {
		c := line[i]
		if c == '\t' && i > 0 && v <= math.MaxInt64 {
			return int64(v), line[i+1:], true
		}
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + uint64(c-'0')
	}
	f, rest, ok := strings.Cut(line, "\t")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.ParseInt(f, 10, 64) // a sign, leading zeros, or not a number
	return n, rest, err == nil
}

// validSHA256 says whether dg is a SHA-256 digest, the only kind a record
// holds: "sha256:" and 64 lowercase hex digits.
func validSHA256(dg string) bool {
	hexa, ok := strings.CutPrefix(dg, "sha256:")
	if !ok || len(hexa) != 64 {
		return false
	}
	for i := 0; i < len(hexa); i++ {
		if !lowerHex[hexa[i]] {
			return false
		}
	}
	return true
}

var lowerHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()

// writeRecord writes b at path atomically, through tmp/: processes that
// write the same record at once each write a whole one, the last kept.
func (c *Cache) writeRecord(path string, b []byte) {
	f, err := os.CreateTemp(filepath.Join(c.Dir, DirTmp), "stat-")
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

func (c *Cache) statFile(tree digest.Digest) string {
	return c.TreeDir(tree) + ".stat"
}

// known reads the stat record of the snapshot of tree (nil: none, or
// damaged). A snapshot's files are read-only and were verified against the
// plan when the stats recorded were taken: at the snapshot's making, or
// just after a run folder linked them (a link changes a file's change
// time, so whoever links records the stats again).
func (c *Cache) known(tree digest.Digest) map[string]store.KnownFile {
	b, err := os.ReadFile(c.statFile(tree))
	if err != nil {
		return nil
	}
	return decodeRecord(b, tree.String())
}

// record writes the stat record of the snapshot of tree. Two processes
// placing the snapshot at once each write theirs; a file whose stat the
// other's link changed since is hashed at its next placement, then
// recorded again.
func (c *Cache) record(tree digest.Digest, files map[string]store.KnownFile) {
	if files != nil {
		c.writeRecord(c.statFile(tree), encodeRecord(tree.String(), files))
	}
}

// statsOf records the stats of the files of dir, a snapshot just copied
// and verified against want, that nothing else has written.
func statsOf(dir string, want plan.Tree) map[string]store.KnownFile {
	out := make(map[string]store.KnownFile, len(want.Files))
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		e, ok := want.Files[rel]
		if err != nil || !ok {
			return nil
		}
		if st, ok := store.StatOf(info); ok {
			out[rel] = store.KnownFile{Stat: st, Digest: e.Digest}
		}
		return nil
	})
	return out
}
