package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/runfolder"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/pipeline"
)

// FileShard marks a run folder that holds shares of its plan's cells, not
// all of them (skillgate run --shard): its reports are then INCOMPLETE,
// and only the merge of every shard's folder gives the verdict.
const FileShard = runfolder.FileShard

// ShardRecord is shard.json: the shares of plan Plan, split in Count, that
// were run into the folder (or merged into it).
type ShardRecord struct {
	Plan   digest.Digest `json:"plan"`
	Count  int           `json:"count"`
	Shards []int         `json:"shards"`
}

// ReadShard reads the folder's shard record for plan p; ok is false when
// there is none, or it was made for another plan.
func ReadShard(out string, p *plan.Plan) (rec ShardRecord, ok bool, err error) {
	rec, ok, err = readShardFile(filepath.Join(out, FileShard))
	if err != nil || !ok || rec.Plan != p.Digest {
		return ShardRecord{}, false, err
	}
	return rec, true, nil
}

func readShardFile(file string) (rec ShardRecord, ok bool, err error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return ShardRecord{}, false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err == nil && (rec.Count < 1 || len(rec.Shards) == 0) {
		err = errors.New("no shard in it")
	}
	for _, s := range rec.Shards {
		if err == nil && (s < 1 || s > rec.Count) {
			err = fmt.Errorf("shard %d of %d", s, rec.Count)
		}
	}
	if err != nil {
		return ShardRecord{}, false, fmt.Errorf("read shard record %s: %w", file, err)
	}
	return rec, true, nil
}

// WriteShard writes the folder's shard record, atomically.
func WriteShard(out string, rec ShardRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		err = pipeline.WriteFile(filepath.Join(out, FileShard), append(b, '\n'))
	}
	if err != nil {
		return fmt.Errorf("write shard record: %w", err)
	}
	return nil
}

// RemoveShard removes the folder's shard record: an unsharded run makes
// the folder the plan's.
func RemoveShard(out string) error {
	if err := os.Remove(filepath.Join(out, FileShard)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove shard record: %w", err)
	}
	return nil
}
