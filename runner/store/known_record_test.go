package store

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// resum gives body, a record without its sum line, its sum line: a record
// edited so, as a writer would have written it.
func resum(body string) []byte {
	sum := sha256.Sum256([]byte(body))
	return []byte(body + "sum " + hex.EncodeToString(sum[:]) + "\n")
}

// TestDecodeRecord: a record reads back as written, and a record whose sum
// is right but one of whose lines is not a file's (a digest not SHA-256 in
// lowercase hex, a number that is not one, a field missing, an empty
// line) is not read at all.
func TestDecodeRecord(t *testing.T) {
	files := map[string]KnownFile{
		"a.txt":       {Digest: digest.FromString("a"), Stat: FileStat{Dev: 2049, Ino: 1, Size: 0, Mode: 0o100644, Mtime: 1, Ctime: 2}},
		"d/b c.txt":   {Digest: digest.FromString("b"), Stat: FileStat{Dev: math.MaxInt64, Ino: 1 << 40, Size: 1 << 33, Mode: 0o100755, Mtime: -5, Ctime: math.MaxInt64}},
		"d/e/ü.md":    {Digest: digest.FromString("c"), Stat: FileStat{Dev: 7, Ino: 123456789012345678, Size: 4096, Mode: 0o100444, Mtime: 1700000000123456789, Ctime: 1700000000123456790}},
		"tab\there":   {Digest: digest.FromString("d")}, // left out: hashed every time
		"line\nbreak": {Digest: digest.FromString("e")},
	}
	rec := EncodeKnown("HEAD", files)
	got := DecodeKnownUnder(rec, "HEAD")
	want := maps.Clone(files)
	delete(want, "tab\there")
	delete(want, "line\nbreak")
	if !maps.Equal(got, want) {
		t.Fatalf("read back %v, want %v", got, want)
	}
	if DecodeKnownUnder(rec, "OTHER") != nil {
		t.Error("a record read under another head")
	}
	if got := DecodeKnownUnder(EncodeKnown("HEAD", nil), "HEAD"); got == nil || len(got) != 0 {
		t.Errorf("an empty record read as %v", got)
	}

	// The record without its sum line, and d/b c.txt's line in it.
	body := string(rec[:strings.LastIndex(string(rec), "sum ")])
	line := strings.SplitAfter(body, "\n")[2]
	edit := func(old, new string) []byte {
		if !strings.Contains(line, old) {
			t.Fatalf("%q not in %q", old, line)
		}
		return resum(strings.Replace(body, line, strings.Replace(line, old, new, 1), 1))
	}
	if got := DecodeKnownUnder(resum(body), "HEAD"); !maps.Equal(got, want) {
		t.Fatalf("the record summed again read as %v", got)
	}
	dg := string(files["d/b c.txt"].Digest)
	ino := "\t" + strconv.FormatInt(1<<40, 10) + "\t"
	for name, b := range map[string][]byte{
		"upper hex":     edit(dg, strings.ToUpper(dg[:10])+dg[10:]),
		"sha512":        edit(dg, string(digest.SHA512.FromString("b"))),
		"short digest":  edit(dg, dg[:70]),
		"long digest":   edit(dg, dg+"0"),
		"no algorithm":  edit(dg, dg[7:]),
		"not hex":       edit(dg, dg[:70]+"g"),
		"not a number":  edit(ino, "\t1e9\t"),
		"letter O":      edit("\t8589934592\t", "\t85899O4592\t"),
		"overflow":      edit(ino, "\t9223372036854775808\t"),
		"underscore":    edit(ino, "\t1_000\t"),
		"space":         edit(ino, "\t 1\t"),
		"empty number":  edit(ino, "\t\t"),
		"field missing": edit(ino, "\t"),
		"empty line":    resum(strings.Replace(body, line, "\n", 1)),
		"digest alone":  resum(strings.Replace(body, line, dg+"\n", 1)),
	} {
		if got := DecodeKnownUnder(b, "HEAD"); got != nil {
			t.Errorf("%s: the record read as %v", name, got)
		}
	}
	// The path is all that follows the seventh tab; a sign or leading
	// zeros make a number still, as strconv reads them.
	if got := DecodeKnownUnder(edit("\td/b c.txt", "\td/b\tc.txt"), "HEAD"); got == nil || got["d/b\tc.txt"] != files["d/b c.txt"] {
		t.Errorf("a path with a tab read as %v", got)
	}
	if got := DecodeKnownUnder(edit("\t8589934592\t", "\t+008589934592\t"), "HEAD"); !maps.Equal(got, want) {
		t.Errorf("a signed size read as %v", got)
	}
}

// FuzzCutInt: cutInt reads the field before a tab as strings.Cut and
// strconv.ParseInt in base 10 read it.
func FuzzCutInt(f *testing.F) {
	for _, s := range []string{"", "0", "007", "-5", "+5", "-", "+", "1_000", " 1", "1 ", "1a", "٣",
		"922337203685477580", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"18446744073709551615", "18446744073709551616", "123456789012345678", "999999999999999999", "1234567890123456789",
		"9999999999999999999", "00000000000000000001", "1700000000123456789"} {
		f.Add(s)
		f.Add(s + "\t")
		f.Add(s + "\trest\tmore")
	}
	f.Fuzz(func(t *testing.T, s string) {
		field, rest, cut := strings.Cut(s, "\t")
		want, err := strconv.ParseInt(field, 10, 64)
		got, gotRest, ok := cutInt(s)
		if ok != (cut && err == nil) || (ok && (got != want || gotRest != rest)) {
			t.Errorf("cutInt(%q) = %d, %q, %v; strconv %d, %q, %v %v", s, got, gotRest, ok, want, rest, cut, err)
		}
	})
}
