package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/skillgate/skillgate/pipeline"

	"github.com/opencontainers/go-digest"
)

// A plan's cells are most of it: a million-cell plan is a million keys
// digested and a million cells encoded, twice (for its digest, then for its
// file); and a fixture of 20,000 files is 20,000 entries of its tree. Both
// are written here by hand, byte for byte what encoding/json
// writes (TestEncodeMatchesEncodingJSON holds them to it), without
// reflection and without holding a second copy of the plan's JSON.

// writePlan writes p as indented canonical JSON: encoding/json's bytes of
// every field but the fixtures and the cells, and those appended in the
// same layout.
func writePlan(w io.Writer, p *Plan) error {
	q := *p
	q.Cells, q.Fixtures = nil, nil
	var head bytes.Buffer
	enc := json.NewEncoder(&head)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&q); err != nil {
		return err
	}
	const hole, fixturesHole = "\n  \"cells\": null", "\n  \"fixtures\": null"
	b := head.Bytes()
	f, i := bytes.Index(b, []byte(fixturesHole)), bytes.Index(b, []byte(hole))
	if i < 0 || bytes.Count(b, []byte(hole)) != 1 || f < 0 || f > i || bytes.Count(b, []byte(fixturesHole)) != 1 {
		return fmt.Errorf("encode plan: no single cells and fixtures fields in the encoding")
	}
	if _, err := w.Write(b[:f]); err != nil {
		return err
	}
	if err := writeTrees(w, "\n  \"fixtures\": ", p.Fixtures); err != nil {
		return err
	}
	if _, err := w.Write(b[f+len(fixturesHole) : i]); err != nil {
		return err
	}
	switch {
	case p.Cells == nil:
		if _, err := io.WriteString(w, hole); err != nil {
			return err
		}
	case len(p.Cells) == 0:
		if _, err := io.WriteString(w, "\n  \"cells\": []"); err != nil {
			return err
		}
	default:
		buf := make([]byte, 0, 64<<10)
		buf = append(buf, "\n  \"cells\": ["...)
		for j := range p.Cells {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = appendCell(buf, &p.Cells[j])
			if len(buf) > 60<<10 {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
		buf = append(buf, "\n  ]"...)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	_, err := w.Write(b[i+len(hole):])
	return err
}

// writeTrees writes field and trees as a field of the plan object, as
// encoding/json indents it: a fixture's tree lists every file of it, so a
// large fixture is most of a plan but its cells.
func writeTrees(w io.Writer, field string, trees map[string]Tree) error {
	b := append(make([]byte, 0, 64<<10), field...)
	switch {
	case trees == nil:
		b = append(b, "null"...)
	case len(trees) == 0:
		b = append(b, "{}"...)
	default:
		b = append(b, '{')
		for j, name := range slices.Sorted(maps.Keys(trees)) {
			if j > 0 {
				b = append(b, ',')
			}
			t := trees[name]
			b = append(b, "\n    "...)
			b = appendString(b, name)
			b = append(b, ": {\n      \"digest\": "...)
			b = appendString(b, string(t.Digest))
			b = append(b, ",\n      \"bytes\": "...)
			b = strconv.AppendInt(b, t.Bytes, 10)
			b = append(b, ",\n      \"files\": "...)
			var err error
			if b, err = writeFiles(w, b, t.Files); err != nil {
				return err
			}
			b = append(b, "\n    }"...)
		}
		b = append(b, "\n  }"...)
	}
	_, err := w.Write(b)
	return err
}

// writeFiles appends a tree's files to b, at the depth of a fixture's,
// writing b to w whenever it holds 60 KB.
func writeFiles(w io.Writer, b []byte, files map[string]TreeEntry) ([]byte, error) {
	if files == nil {
		return append(b, "null"...), nil
	}
	if len(files) == 0 {
		return append(b, "{}"...), nil
	}
	b = append(b, '{')
	for j, p := range slices.Sorted(maps.Keys(files)) {
		if j > 0 {
			b = append(b, ',')
		}
		e := files[p]
		b = append(b, "\n        "...)
		b = appendString(b, p)
		b = append(b, ": {\n          \"digest\": "...)
		b = appendString(b, string(e.Digest))
		if e.Mode != "" {
			b = append(b, ",\n          \"mode\": "...)
			b = appendString(b, e.Mode)
		}
		b = append(b, ",\n          \"size\": "...)
		b = strconv.AppendInt(b, e.Size, 10)
		b = append(b, "\n        }"...)
		if len(b) > 60<<10 {
			if _, err := w.Write(b); err != nil {
				return b, err
			}
			b = b[:0]
		}
	}
	return append(b, "\n      }"...), nil
}

// appendCell appends one cell as an element of the plan's cells array.
func appendCell(b []byte, c *Cell) []byte {
	b = append(b, "\n    {\n      \"id\": "...)
	b = appendString(b, c.ID)
	b = append(b, ",\n      \"case\": "...)
	b = appendString(b, c.Case)
	b = append(b, ",\n      \"arm\": "...)
	b = appendString(b, c.Arm)
	b = append(b, ",\n      \"trial\": "...)
	b = strconv.AppendInt(b, int64(c.Trial), 10)
	if c.Agent != "" {
		b = append(b, ",\n      \"agent\": "...)
		b = appendString(b, c.Agent)
	}
	b = append(b, ",\n      \"rollout\": "...)
	b = appendString(b, string(c.Rollout))
	b = append(b, ",\n      \"grade\": "...)
	b = appendString(b, string(c.Grade))
	if c.Rerun != 0 {
		b = append(b, ",\n      \"rerun\": "...)
		b = strconv.AppendInt(b, int64(c.Rerun), 10)
	}
	return append(b, "\n    }"...)
}

// appendString appends s as encoding/json writes a string.
func appendString(b []byte, s string) []byte { return pipeline.AppendJSONString(b, s) }

// cellKeys digests a cell's rollout and grade keys: the digests of a
// rolloutKey's and a gradeKey's JSON, written as encoding/json writes them.
type cellKeys struct {
	buf []byte
	sum [sha256.Size]byte
}

func (k *cellKeys) digest() digest.Digest {
	k.sum = sha256.Sum256(k.buf)
	out := make([]byte, 0, len("sha256:")+2*sha256.Size)
	out = append(out, "sha256:"...)
	out = hex.AppendEncode(out, k.sum[:])
	return digest.Digest(out)
}

func (k *cellKeys) rollout(agent, limits, arm, caseDigest digest.Digest, trial int) digest.Digest {
	b := append(k.buf[:0], `{"agent":`...)
	b = appendString(b, string(agent))
	b = append(b, `,"limits":`...)
	b = appendString(b, string(limits))
	b = append(b, `,"arm":`...)
	b = appendString(b, string(arm))
	b = append(b, `,"case":`...)
	b = appendString(b, string(caseDigest))
	b = append(b, `,"trial":`...)
	b = strconv.AppendInt(b, int64(trial), 10)
	k.buf = append(b, '}')
	return k.digest()
}

func (k *cellKeys) grade(rollout, caseDigest, judge digest.Digest) digest.Digest {
	b := append(k.buf[:0], `{"rollout":`...)
	b = appendString(b, string(rollout))
	b = append(b, `,"case":`...)
	b = appendString(b, string(caseDigest))
	if judge != "" {
		b = append(b, `,"judge":`...)
		b = appendString(b, string(judge))
	}
	k.buf = append(b, '}')
	return k.digest()
}

// rolloutKey is the JSON object a cell's rollout key digests: everything
// that decides what the agent does in the cell.
type rolloutKey struct {
	Agent  digest.Digest `json:"agent"`
	Limits digest.Digest `json:"limits"`
	Arm    digest.Digest `json:"arm"`
	Case   digest.Digest `json:"case"`
	Trial  int           `json:"trial"`
}

// gradeKey is the JSON object a cell's grade key digests: its rollout and
// everything that decides its grade.
type gradeKey struct {
	Rollout digest.Digest `json:"rollout"`
	Case    digest.Digest `json:"case"`
	Judge   digest.Digest `json:"judge,omitempty"`
}
