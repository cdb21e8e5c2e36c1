package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"

	"github.com/opencontainers/go-digest"
)

// A stored record (a rollout's rollout.json, a grade, a judgement, a judge
// failure) carries its seal: the digest of what it records (the record's
// own JSON, every field but the seal, compact with sorted keys), written as
// its last field. It is taken over the document, not over the Go value it
// decodes into, so a record stays valid when a later skillgate reads it
// into a struct with fields added or gone. Every reader checks it (readSealed), so
// a record edited by hand is refused naming its file, by every command
// alike; and a record re-sealed after an edit still changes the run's root
// digest (Root), which a reviewer compares with the one the run printed.
const sealField = "seal"

// sealJSON is v as indented JSON with its seal as the last field.
func sealJSON(v any) ([]byte, error) {
	compact, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d, err := documentDigest(compact)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\n")
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("seal record: not a JSON object")
	}
	body := bytes.TrimRight(b[:len(b)-1], "\n ")
	sep := ",\n"
	if bytes.Equal(body, []byte("{")) {
		sep = "\n"
	}
	out := append(append([]byte{}, body...), sep+"  \""+sealField+"\": \""+d.String()+"\"\n}\n"...)
	return out, nil
}

// readSealed reads the record in file into v and checks its seal; a file
// that is no regular file (a link) is refused. ok is false when there is
// none.
func readSealed(file string, v any) (ok bool, err error) {
	b, err := readRegular(file)
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, err
	}
	return true, unseal(file, b, v)
}

// unseal decodes the record b read from file into v and checks its seal.
func unseal(file string, b []byte, v any) error {
	var s struct {
		Seal digest.Digest `json:"seal"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	if s.Seal == "" {
		return fmt.Errorf("read %s: it records no seal: edited by hand, or stored by a skillgate that did not seal its records (run the suite again into a new folder)", file)
	}
	got, err := documentDigest(b)
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	if got != s.Seal {
		return fmt.Errorf("read %s: its content (digest %s) is not what its seal %s records: edited or damaged", file, got, s.Seal)
	}
	return nil
}

// documentDigest is the digest of the JSON object b without its seal field:
// compact, keys sorted, numbers as written.
func documentDigest(b []byte) (digest.Digest, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return "", err
	}
	delete(doc, sealField)
	compact, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	return digest.FromBytes(compact), nil
}

// readRegular reads a file of the run folder, refusing a link or anything
// else that is not a regular file: no command follows a link out of a run
// folder.
func readRegular(file string) ([]byte, error) {
	fi, err := os.Lstat(file)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file (%s): a run folder's records are files, never links", file, fi.Mode().Type())
	}
	return os.ReadFile(file)
}

// putSealed stores v sealed in file, atomically.
func (s *Store) putSealed(file string, v any) error {
	b, err := sealJSON(v)
	if err != nil {
		return err
	}
	return s.PutFile(file, b)
}

// Reseal seals a stored record again for what it now holds: what a
// deliberate edit of a record needs before skillgate reads it again. The
// run's root digest still tells the edited folder from the one the run
// left.
func Reseal(file string) error {
	s := &Store{Dir: filepath.Dir(file)}
	for d := filepath.Dir(file); d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "store" {
			s.Dir = filepath.Dir(d)
			break
		}
	}
	b, err := readRegular(file)
	if err != nil {
		return fmt.Errorf("reseal %s: %w", file, err)
	}
	var v any
	switch slash := filepath.ToSlash(file); {
	case strings.HasSuffix(slash, "/"+FileRollout):
		r := &Rollout{}
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("reseal %s: %w", file, err)
		}
		if err := r.recordTranscript(filepath.Dir(file)); err != nil {
			return fmt.Errorf("reseal %s: %w", file, err)
		}
		v = r
	case strings.Contains(slash, "/"+DirGrades+"/"):
		v = &grade.CellResult{}
	case strings.Contains(slash, "/"+DirJudgements+"/"):
		v = &Judgement{}
	case strings.Contains(slash, "/"+DirJudgeFailures+"/"):
		v = &JudgeFailure{}
	default:
		return fmt.Errorf("reseal %s: not a sealed record", file)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("reseal %s: %w", file, err)
	}
	if err := s.putSealed(file, v); err != nil {
		return fmt.Errorf("reseal %s: %w", file, err)
	}
	return nil
}

// recordTranscript records the digests of the stored stdout and stderr
// of the rollout in dir, so a transcript swapped later is refused.
func (r *Rollout) recordTranscript(dir string) error {
	for _, f := range []struct {
		name string
		to   *digest.Digest
	}{{FileStdout, &r.Transcript.StdoutDigest}, {FileStderr, &r.Transcript.StderrDigest}} {
		b, err := readRegular(filepath.Join(dir, f.name))
		if os.IsNotExist(err) {
			*f.to = ""
			continue
		}
		if err != nil {
			return err
		}
		*f.to = digest.FromBytes(b)
	}
	return nil
}

// jsonString is b as a string that has been through JSON, as a record's
// answer has: each byte that is not UTF-8 becomes U+FFFD.
func jsonString(b []byte) string {
	enc, err := json.Marshal(string(b))
	if err != nil {
		return string(b)
	}
	var s string
	if err := json.Unmarshal(enc, &s); err != nil {
		return string(b)
	}
	return s
}

// verifyRolloutFiles checks what a sealed rollout record says of the files
// beside it in dir: the answer file is the recorded answer, the transcript
// is the one recorded, every file under files/ holds content of the digest
// it is named by, and every changed file's content is there. Nothing in the
// folder may be a link.
func verifyRolloutFiles(dir string, r *Rollout) error {
	if b, err := readRegular(filepath.Join(dir, FileAnswer)); err == nil {
		if jsonString(b) != r.Answer {
			return fmt.Errorf("%s differs from the answer %s records: altered or damaged", FileAnswer, FileRollout)
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	for _, f := range []struct {
		name string
		want digest.Digest
	}{{FileStdout, r.Transcript.StdoutDigest}, {FileStderr, r.Transcript.StderrDigest}} {
		b, err := readRegular(filepath.Join(dir, f.name))
		if os.IsNotExist(err) && f.want == "" {
			continue
		}
		if err != nil {
			return err
		}
		if got := digest.FromBytes(b); got != f.want {
			return fmt.Errorf("%s: its content has digest %s; %s records %q: altered or damaged", f.name, got, FileRollout, f.want)
		}
	}
	held := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&fs.ModeSymlink != 0 || !(d.IsDir() || d.Type().IsRegular()) {
			return fmt.Errorf("%s: not a regular file or folder: a stored rollout holds no links", filepath.ToSlash(rel))
		}
		blob, ok := strings.CutPrefix(filepath.ToSlash(rel), DirFiles+"/")
		if !ok || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if got := digest.FromBytes(b); got.Encoded() != blob {
			return fmt.Errorf("%s: its content has digest %s, not the one it is named by: altered or damaged", filepath.ToSlash(rel), got)
		}
		held[blob] = true
		return nil
	})
	if err != nil {
		return err
	}
	changes := r.Changes
	if r.Setup != nil {
		changes = append(append([]Change{}, changes...), r.Setup.Changes...)
	}
	for _, ch := range changes {
		if ch.Digest == "" || ch.Kind == ChangeDeleted || ch.Cut != "" {
			continue
		}
		if !held[ch.Digest.Encoded()] {
			return fmt.Errorf("changed file %s: its content %s/%s is missing", ch.Path, DirFiles, ch.Digest.Encoded())
		}
	}
	return nil
}
