package readback

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/runfolder"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// FileReuseSentinels is the run folder's record of run --reuse's drift
// sentinels (verdict.ReuseSentinels).
const FileReuseSentinels = runfolder.FileReuseSentinels

// ReadReuseSentinels reads the run folder's sentinel record; nil when it
// has none.
func ReadReuseSentinels(out string) (*verdict.ReuseSentinels, error) {
	b, err := os.ReadFile(filepath.Join(out, FileReuseSentinels))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", FileReuseSentinels, err)
	}
	var r verdict.ReuseSentinels
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(out, FileReuseSentinels), err)
	}
	return &r, nil
}

// WriteReuseSentinels records groups in the run folder's sentinel record:
// each replaces the group of its agent and model, the others are kept.
func WriteReuseSentinels(out string, groups []verdict.SentinelGroup) error {
	old, err := ReadReuseSentinels(out)
	if err != nil {
		return err
	}
	rec := &verdict.ReuseSentinels{}
	if old != nil {
		rec = old
	}
	for _, g := range groups {
		i := slices.IndexFunc(rec.Groups, func(o verdict.SentinelGroup) bool { return o.Agent == g.Agent && o.Model == g.Model })
		if i >= 0 {
			rec.Groups[i] = g
		} else {
			rec.Groups = append(rec.Groups, g)
		}
	}
	slices.SortFunc(rec.Groups, func(a, b verdict.SentinelGroup) int {
		if c := strings.Compare(a.Agent, b.Agent); c != 0 {
			return c
		}
		return strings.Compare(a.Model, b.Model)
	})
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", FileReuseSentinels, err)
	}
	return pipeline.WriteFile(filepath.Join(out, FileReuseSentinels), append(b, '\n'))
}
