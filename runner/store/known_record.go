package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/go-digest"
)

// A stat record (the machine cache's trees/HEX.stat for a snapshot and
// index/KEY for a live folder, a run folder's store/tmp/known/HEX for a
// tree it placed) lists files by path, each with the stat it had when its digest
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

// EncodeKnown writes files under the header head (no newline in it).
// Paths with a newline or a tab are left out: they are hashed.
func EncodeKnown(head string, files map[string]KnownFile) []byte {
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

// DecodeKnownUnder reads a record written under head; nil when it is damaged,
// of another head, or absent.
func DecodeKnownUnder(b []byte, head string) map[string]KnownFile {
	if !bytes.HasPrefix(b, []byte(recordMagic+head+"\n")) {
		return nil
	}
	_, files := DecodeKnown(b)
	return files
}

// DecodeKnown reads a record and its head; nil files when it is damaged.
func DecodeKnown(b []byte) (head string, files map[string]KnownFile) {
	first, _, _ := bytes.Cut(b, []byte("\n"))
	head, ok := strings.CutPrefix(string(first), recordMagic)
	if !ok {
		return "", nil
	}
	return head, decodeBody(b)
}

func decodeBody(b []byte) map[string]KnownFile {
	i := bytes.LastIndex(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if i < 0 {
		return nil
	}
	body, tail := b[:i+1], strings.TrimSpace(string(b[i+1:]))
	sum := sha256.Sum256(body)
	if tail != "sum "+hex.EncodeToString(sum[:]) {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")[1:]
	out := make(map[string]KnownFile, len(lines))
	for _, line := range lines {
		f := strings.SplitN(line, "\t", 8)
		if len(f) != 8 {
			return nil
		}
		var n [6]int64
		for j := range n {
			v, err := strconv.ParseInt(f[1+j], 10, 64)
			if err != nil {
				return nil
			}
			n[j] = v
		}
		dg := digest.Digest(f[0])
		if dg.Validate() != nil {
			return nil
		}
		out[f[7]] = KnownFile{Digest: dg, Stat: FileStat{
			Dev: uint64(n[0]), Ino: uint64(n[1]), Size: n[2], Mode: uint32(n[3]), Mtime: n[4], Ctime: n[5],
		}}
	}
	return out
}
