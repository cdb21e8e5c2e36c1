package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline/runfolder"
)

// The spend ledger is storage only: runner/spend admits cells and judge calls
// under the spend cap and appends here what each cost.

// FileSpend is the run folder's spend ledger: one JSON line per cell, calibration cell
// or judge call that had a cost, or that the spend cap refused, appended when known and
// never rewritten.
const FileSpend = runfolder.FileSpend

// Kinds of SpendEntry.
const (
	SpendCell        = "cell"
	SpendCalibration = "calibration"
	SpendJudge       = "judge"
)

// SpendEntry is one line of the spend ledger.
type SpendEntry struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// ID is the cell's ID, or the judgement's key.
	ID      string        `json:"id"`
	Rollout digest.Digest `json:"rollout,omitempty"`
	USD     float64       `json:"usd"`
	// Estimated: the per-call price, for want of token counts and token prices.
	Estimated bool `json:"estimated,omitempty"`
	// Refused says why the spend cap did not start the cell or judge call
	// (USD is then 0): reports show it as not run, or not judged, for the cap.
	Refused string `json:"refused,omitempty"`
}

// ReadSpend reads a run folder's spend ledger; none is an empty one. A last line cut
// short (the process died writing it) is skipped; any other bad line is an error.
func ReadSpend(out string) ([]SpendEntry, error) {
	path := filepath.Join(out, filepath.FromSlash(FileSpend))
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read spend ledger: %w", err)
	}
	var entries []SpendEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e SpendEntry
		if err := json.Unmarshal(line, &e); err != nil {
			if !bytes.HasSuffix(b, []byte("\n")) && bytes.HasSuffix(b, line) {
				break // the last line, never finished
			}
			return nil, fmt.Errorf("read spend ledger %s:%d: %w", path, n, err)
		}
		entries = append(entries, e)
	}
	return entries, sc.Err()
}

// FolderSpend is what the run folder's ledger adds up to.
func FolderSpend(out string) (float64, error) {
	entries, err := ReadSpend(out)
	var sum float64
	for _, e := range entries {
		sum += e.USD
	}
	return sum, err
}

// SpendRefusals are the cells and judgements the spend cap last refused, by ID,
// with why, leaving out those a later entry shows as run.
func SpendRefusals(out string) (map[string]string, error) {
	entries, err := ReadSpend(out)
	refused := map[string]string{}
	for _, e := range entries {
		if e.Refused != "" {
			refused[e.ID] = e.Refused
		} else {
			delete(refused, e.ID)
		}
	}
	return refused, err
}

// AppendSpend appends e to the run folder's ledger and syncs it.
func AppendSpend(out string, e SpendEntry) error {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC().Round(time.Millisecond)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("write spend ledger: %w", err)
	}
	path := filepath.Join(out, filepath.FromSlash(FileSpend))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write spend ledger: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write spend ledger: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write spend ledger: %w", err)
	}
	return nil
}
