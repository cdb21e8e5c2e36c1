package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/opencontainers/go-digest"
)

// timingKeys are the fields of stored records that measure time: the only
// inputs of a report that differ between two runs of a deterministic agent.
var timingKeys = map[string]bool{
	"startedAt": true, "durations": true, "agentSeconds": true, "totalSeconds": true,
	"seconds": true, "latencySeconds": true,
}

// sameTimes is the script command `sametimes DIR...`: it sets every timing
// field of the run folders' stored rollouts, grades and judgements to one
// fixed value, so reports built from two runs of the same deterministic
// agent can be compared byte for byte. Nothing else is touched.
func sameTimes(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: sametimes DIR...")
	}
	for _, dir := range args {
		ts.Check(equalTimes(ts.MkAbs(dir)))
	}
}

// equalTimes rewrites the timing fields of a run folder's stored records.
func equalTimes(dir string) error {
	return filepath.WalkDir(filepath.Join(dir, "store"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !strings.HasPrefix(rel, "store/rollouts/") && !strings.HasPrefix(rel, "store/grades/") && !strings.HasPrefix(rel, "store/judgements/") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("read %s: %w", rel, err)
		}
		out, err := json.MarshalIndent(fixTimes(v), "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, append(out, '\n'), 0o644); err != nil {
			return err
		}
		return store.Reseal(p)
	})
}

func fixTimes(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			switch {
			case k == "startedAt":
				t[k] = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
			case k == "durations":
				if m, ok := e.(map[string]any); ok {
					for dk := range m {
						m[dk] = json.Number("1")
					}
				}
			case timingKeys[k]:
				t[k] = json.Number("1")
			default:
				t[k] = fixTimes(e)
			}
		}
	case []any:
		for i := range t {
			t[i] = fixTimes(t[i])
		}
	}
	return v
}

// tamper is the script command `tamper KIND SRC DST`: it copies the run
// folder SRC to DST and alters one stored record of DST: "file" a changed
// file's content, "tree" a file of a tree snapshot, "grade" the rollout a
// grade names (sealed again), "passed" a failed grade set to passed by
// hand; "answer" rewrites a rollout's answer in both of its files
// and makes it start an hour later, and changes its grades' score, as a
// second run of the cell on another machine would have stored it.
func tamper(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: tamper file|tree|grade|answer SRC DST")
	}
	src, dst := ts.MkAbs(args[1]), ts.MkAbs(args[2])
	ts.Check(copyFolder(src, dst))
	ts.Check(alter(args[0], dst))
}

func alter(kind, dir string) error {
	rollouts := filepath.Join(dir, store.DirRollouts)
	switch kind {
	case "file":
		blobs, _ := filepath.Glob(filepath.Join(rollouts, "*", store.DirFiles, "*"))
		if len(blobs) == 0 {
			return fmt.Errorf("no changed file in %s", dir)
		}
		return appendTo(blobs[0], "altered\n")
	case "tree":
		files, _ := filepath.Glob(filepath.Join(dir, store.DirTrees, "*", "*"))
		for _, f := range files {
			if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() {
				return appendTo(f, "altered\n")
			}
		}
		return fmt.Errorf("no tree file in %s", dir)
	case "grade":
		g, r, err := planGrade(dir)
		if err != nil {
			return err
		}
		r["rollout"] = digest.FromString("another rollout").String()
		if err := writeJSON(g, r); err != nil {
			return err
		}
		return store.Reseal(g)
	case "passed":
		// A failed grade set to passed by hand, its seal left as it was.
		grades, _ := filepath.Glob(filepath.Join(dir, store.DirGrades, "*.json"))
		for _, g := range grades {
			b, err := os.ReadFile(g)
			if err != nil {
				return err
			}
			if edited := bytes.Replace(b, []byte(`"passed": false`), []byte(`"passed": true`), 1); !bytes.Equal(edited, b) {
				return os.WriteFile(g, edited, 0o644)
			}
		}
		return fmt.Errorf("no failed grade in %s", dir)
	case "answer":
		_, r, err := planGrade(dir)
		if err != nil {
			return err
		}
		key := digest.Digest(r["rollout"].(string)).Encoded()
		ro := filepath.Join(rollouts, key, store.FileRollout)
		var rec map[string]any
		if err := readJSON(ro, &rec); err != nil {
			return err
		}
		started, err := time.Parse(time.RFC3339Nano, rec["startedAt"].(string))
		if err != nil {
			return err
		}
		answer := rec["answer"].(string) + "\n(answered on another machine)"
		rec["answer"], rec["startedAt"] = answer, started.Add(time.Hour).Format(time.RFC3339Nano)
		if err := writeJSON(ro, rec); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(rollouts, key, store.FileAnswer), []byte(answer), 0o644); err != nil {
			return err
		}
		if err := store.Reseal(ro); err != nil {
			return err
		}
		grades, _ := filepath.Glob(filepath.Join(dir, store.DirGrades, "*.json"))
		for _, gf := range grades {
			var gr map[string]any
			if err := readJSON(gf, &gr); err != nil {
				return err
			}
			if gr["rollout"] == r["rollout"] {
				gr["score"] = 0.25
				if err := writeJSON(gf, gr); err != nil {
					return err
				}
				if err := store.Reseal(gf); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return fmt.Errorf("tamper: unknown kind %q", kind)
}

// reseal is the script command `reseal DIR...`: it seals again every
// record under the folders, as a run folder laid out by hand needs.
func reseal(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: reseal DIR...")
	}
	for _, dir := range args {
		ts.Check(filepath.WalkDir(ts.MkAbs(dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			return store.Reseal(p)
		}))
	}
}

// planGrade is the first stored grade (by file name) of a plan cell, not a
// rerun, with a rollout stored beside it.
func planGrade(dir string) (string, map[string]any, error) {
	grades, _ := filepath.Glob(filepath.Join(dir, store.DirGrades, "*.json"))
	slices.Sort(grades)
	for _, g := range grades {
		var r map[string]any
		if err := readJSON(g, &r); err != nil {
			return "", nil, err
		}
		cell, _ := r["cell"].(string)
		ro, _ := r["rollout"].(string)
		if strings.Contains(cell, "/rerun") || ro == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, store.DirRollouts, digest.Digest(ro).Encoded())); err == nil {
			return g, r, nil
		}
	}
	return "", nil, fmt.Errorf("no grade of a plan cell in %s", dir)
}

func readJSON(file string, v any) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func writeJSON(file string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	os.Chmod(file, 0o644)
	return os.WriteFile(file, append(b, '\n'), 0o644)
}

func appendTo(file, text string) error {
	if err := os.Chmod(file, 0o644); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyFolder copies a run folder, keeping modes and symlinks, without its
// lock.
func copyFolder(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case rel == ".lock":
			return nil
		case info.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(t, to)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, info.Mode().Perm())
		}
	})
}
