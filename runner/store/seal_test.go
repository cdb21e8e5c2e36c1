package store

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSealIsTheDocuments: a record's seal is taken over its own JSON, so a
// skillgate whose type has fields added or gone still reads it, while an
// edit of any field, read or not, is refused.
func TestSealIsTheDocuments(t *testing.T) {
	type written struct {
		Passed bool   `json:"passed"`
		Note   string `json:"note"`
		Count  int64  `json:"count"`
	}
	b, err := sealJSON(written{Passed: false, Note: "kept", Count: 1 << 60})
	if err != nil {
		t.Fatal(err)
	}
	var fewer struct {
		Passed bool `json:"passed"`
	}
	if err := unseal("r.json", b, &fewer); err != nil {
		t.Fatalf("a type without a field refuses the record: %v", err)
	}
	var more struct {
		Passed bool   `json:"passed"`
		Later  string `json:"later"`
	}
	if err := unseal("r.json", b, &more); err != nil {
		t.Fatalf("a type with a field added refuses the record: %v", err)
	}
	for _, edit := range [][2]string{
		{`"passed": false`, `"passed": true`},
		{`"note": "kept"`, `"note": "kept!"`},
		{`"count": 1152921504606846976`, `"count": 1152921504606846977`},
	} {
		edited := bytes.Replace(b, []byte(edit[0]), []byte(edit[1]), 1)
		if bytes.Equal(edited, b) {
			t.Fatalf("edit %q not applied to\n%s", edit[0], b)
		}
		if err := unseal("r.json", edited, &fewer); err == nil || !strings.Contains(err.Error(), "not what its seal") {
			t.Errorf("edit %s → %s: got %v, want refused", edit[0], edit[1], err)
		}
	}
}

// TestAnswerNotUTF8: an answer with bytes that are not UTF-8 is stored
// raw in answer.txt and through JSON in rollout.json; the two still agree,
// and an edit of answer.txt is still refused.
func TestAnswerNotUTF8(t *testing.T) {
	dir := t.TempDir()
	raw := "ok \xff\xfe done"
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var recorded string
	if err := json.Unmarshal(b, &recorded); err != nil {
		t.Fatal(err)
	}
	r := &Rollout{Answer: recorded}
	if err := os.WriteFile(filepath.Join(dir, FileAnswer), []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verifyRolloutFiles(dir, r); err != nil {
		t.Fatalf("an answer that is not UTF-8 is refused: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileAnswer), []byte("ok \xff\xfe dome"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verifyRolloutFiles(dir, r); err == nil {
		t.Fatal("an edited answer.txt is accepted")
	}
}
