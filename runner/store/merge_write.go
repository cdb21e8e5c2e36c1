package store

// Merge, phase 5 (write): the chosen versions are copied into the merged
// folder, the others set aside, and the ledgers and merge record written.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/opencontainers/go-digest"
)

// write lays the merged folder out beside out, then renames it into place,
// so a failed merge leaves nothing where a run would trust it.
func (m *merger) write() error {
	parent := filepath.Dir(m.out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(m.out)+".merge-")
	if err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	for _, d := range []string{DirRollouts, DirTmp} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return fmt.Errorf("write merged run folder: %w", err)
		}
	}
	put := func(rel string, b []byte) error {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, rel), b, 0o644)
	}
	if err := put(FilePlan, m.planB); err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	for _, kind := range []string{KindRollout, KindTree, KindGrade, KindPacket, KindJudgement, KindJudgeFailure, KindCalibration, KindExchangeBody, KindExchangeLog} {
		keys := m.sorted(kind)
		if kind == KindCalibration {
			keys = nil
			if k := m.records["calibration"]; k != nil {
				keys = []*mergeKey{k}
			}
		}
		for _, k := range keys {
			if k.chosen != nil {
				rel := recordPath(kind, k.key)
				if kind == KindCalibration {
					rel = FileCalibration
				}
				if err := m.copyVersion(kind, k.chosen, filepath.Join(tmp, rel)); err != nil {
					return fmt.Errorf("write merged run folder: %s %s: %w", kind, short(k.key), err)
				}
				m.rec.Records[kind]++
			}
			if len(k.aside) == 0 {
				continue
			}
			dup := MergeDuplicate{Kind: kind, Key: k.key, Rule: k.rule, SetAside: []MergeVersion{}}
			if k.chosen != nil {
				dup.Chosen = MergeVersion{Inputs: k.chosen.inputs, Digest: k.chosen.digest}
			}
			for _, v := range k.aside {
				rel := filepath.Join(DirSetAside, kind, k.key, v.digest.Encoded()[:16], filepath.Base(v.src))
				if err := m.copyVersion(kind, v, filepath.Join(tmp, rel)); err != nil {
					return fmt.Errorf("write merged run folder: %s %s: %w", kind, short(k.key), err)
				}
				dup.SetAside = append(dup.SetAside, MergeVersion{Inputs: v.inputs, Digest: v.digest, Path: filepath.ToSlash(rel)})
			}
			m.rec.Duplicates = append(m.rec.Duplicates, dup)
		}
	}
	if len(m.spend) > 0 {
		if err := put(filepath.FromSlash(FileSpend), ledger(m.spend, func(e SpendEntry) time.Time { return e.Time })); err != nil {
			return fmt.Errorf("write merged run folder: %w", err)
		}
		m.rec.Spend = len(m.spend)
	}
	if len(m.audits) > 0 {
		if err := put(grade.FileAuditLedger, ledger(m.audits, func(d grade.AuditDecision) time.Time { return d.Time })); err != nil {
			return fmt.Errorf("write merged run folder: %w", err)
		}
		m.rec.Audits = len(m.audits)
	}
	if b, n, err := m.reusedLedger(); err != nil || n > 0 {
		if err == nil {
			err = put(FileReused, b)
		}
		if err != nil {
			return fmt.Errorf("write merged run folder: %w", err)
		}
		m.rec.Reused = n
	}
	if err := m.writeSentinels(tmp); err != nil {
		return err
	}
	if m.rec.Shard != nil {
		b, _ := json.MarshalIndent(m.rec.Shard, "", "  ")
		if err := put(FileShard, append(b, '\n')); err != nil {
			return fmt.Errorf("write merged run folder: %w", err)
		}
	}
	b, err := json.MarshalIndent(m.rec, "", "  ")
	if err == nil {
		err = put(FileMerge, append(b, '\n'))
	}
	if err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	os.Remove(m.out) // an empty folder, checked when the merge began
	if err := os.Rename(tmp, m.out); err != nil {
		return fmt.Errorf("write merged run folder: %w", err)
	}
	done = true
	return nil
}

// ledger renders a ledger's lines in time order, then by line.
func ledger[T any](lines map[string]T, at func(T) time.Time) []byte {
	keys := make([]string, 0, len(lines))
	for l := range lines {
		keys = append(keys, l)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := at(lines[a]).Compare(at(lines[b])); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var b bytes.Buffer
	for _, l := range keys {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// copyVersion copies a verified version to dst and checks the copy is what
// was verified: a file changed since is an error, never a merged record. A
// calibration's version is its input's calibration.json, read at the scan.
func (m *merger) copyVersion(kind string, v *mergeVersion, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if kind == KindCalibration {
		return os.WriteFile(dst, m.inputs[v.inputs[0]].calibration, 0o644)
	}
	if !v.dir {
		b, err := readRegular(v.src)
		if err != nil {
			return err
		}
		if digest.FromBytes(b) != v.digest {
			return fmt.Errorf("%s changed while it was merged", v.src)
		}
		return os.WriteFile(dst, b, 0o644)
	}
	err := filepath.WalkDir(v.src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(v.src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		default:
			return copyFile(p, to, info.Mode().Perm())
		}
	})
	if err != nil {
		return err
	}
	t, err := plan.HashTree(dst)
	if err != nil {
		return err
	}
	if t.Digest != v.digest {
		return fmt.Errorf("%s changed while it was merged", v.src)
	}
	return nil
}

// copyFile copies a file, keeping its permissions (a tree snapshot's files
// are read-only, an executable stays one).
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// short is a key's first 12 hex digits, for messages.
func short(key string) string {
	key = strings.TrimPrefix(key, "sha256:")
	if len(key) > 12 {
		return key[:12]
	}
	return key
}
