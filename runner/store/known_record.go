package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/go-digest"
)

// A stat record (the machine cache's trees/HEX.stat for a snapshot and
// index/KEY for a live folder, a run folder's .stat-records/HEX for a
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
	b := make([]byte, 0, 64+len(head)+len(files)*160)
	b = append(b, recordMagic+head+"\n"...)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if strings.ContainsAny(p, "\n\t") {
			continue
		}
		k := files[p]
		s := k.Stat
		b = append(b, k.Digest...)
		b = strconv.AppendUint(append(b, '\t'), s.Dev, 10)
		b = strconv.AppendUint(append(b, '\t'), s.Ino, 10)
		b = strconv.AppendInt(append(b, '\t'), s.Size, 10)
		b = strconv.AppendUint(append(b, '\t'), uint64(s.Mode), 10)
		b = strconv.AppendInt(append(b, '\t'), s.Mtime, 10)
		b = strconv.AppendInt(append(b, '\t'), s.Ctime, 10)
		b = append(b, '\t')
		b = append(b, p...)
		b = append(b, '\n')
	}
	sum := sha256.Sum256(b)
	return append(b, "sum "+hex.EncodeToString(sum[:])+"\n"...)
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
	text := strings.TrimSuffix(string(body), "\n")
	_, text, more := strings.Cut(text, "\n") // past the head
	out := make(map[string]KnownFile, strings.Count(text, "\n")+1)
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
func decodeLine(line string) (string, KnownFile, bool) {
	const dgLen = len("sha256:") + 64
	if len(line) <= dgLen || line[dgLen] != '\t' || !validSHA256(line[:dgLen]) {
		return "", KnownFile{}, false
	}
	dg, line := line[:dgLen], line[dgLen+1:]
	var n [6]int64
	for j := range n {
		var ok bool
		if n[j], line, ok = cutInt(line); !ok {
			return "", KnownFile{}, false
		}
	}
	return line, KnownFile{Digest: digest.Digest(dg), Stat: FileStat{
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
