package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/opencontainers/go-digest"
)

// Roles of a judge call.
const (
	RoleJudge       = "judge"
	RoleAdjudicator = "adjudicator"
)

// Judgement is one stored judge call: the reply and what was read from it.
type Judgement struct {
	Key   string        `json:"key"`
	Mode  string        `json:"mode"`
	Judge digest.Digest `json:"judge"`
	// Cells are the judged cells: the cell, or the candidate then the
	// baseline. They never reach the judge.
	Cells []string `json:"cells"`
	// Role is "adjudicator" for the adjudication of a disputed cell.
	Role string `json:"role,omitempty"`
	// Position is the candidate's position (A or B) in a pairwise packet.
	Position string     `json:"position,omitempty"`
	Reply    string     `json:"reply"`
	Usage    JudgeUsage `json:"usage"`
	// Error says why the reply is invalid; empty when it was read.
	Error    string                  `json:"error,omitempty"`
	Criteria []grade.CriterionResult `json:"criteria,omitempty"`
	Winner   string                  `json:"winner,omitempty"`
	Evidence string                  `json:"evidence,omitempty"`
	// Outcome is the candidate's WIN, TIE, LOSS or INVALID (pairwise).
	Outcome string `json:"outcome,omitempty"`
}

// PacketPath and JudgementPath are where a packet and a judgement live.
func (s *Store) PacketPath(key string) string {
	return filepath.Join(s.Dir, DirPackets, key+".json")
}

// JudgementPath is where the judgement stored under key lives.
func (s *Store) JudgementPath(key string) string {
	return filepath.Join(s.Dir, DirJudgements, key+".json")
}

// Judgement reads the judgement stored under key.
func (s *Store) Judgement(key string) (*Judgement, bool, error) {
	var j Judgement
	file := s.JudgementPath(key)
	if ok, err := readSealed(file, &j); err != nil || !ok {
		return nil, false, err
	}
	if j.Key != key {
		return nil, false, fmt.Errorf("read judgement %s: it records key %s, not the one it is named by: altered or damaged", file, j.Key)
	}
	return &j, true, nil
}

// PutJudgement stores a judgement under its key, atomically.
func (s *Store) PutJudgement(j *Judgement) error {
	if err := s.putSealed(s.JudgementPath(j.Key), j); err != nil {
		return fmt.Errorf("store judgement %s: %w", j.Key, err)
	}
	return nil
}

// PutPacket stores the blinded packet sent to the judge under key.
func (s *Store) PutPacket(key string, packet []byte) error {
	if err := s.PutFile(s.PacketPath(key), append(append([]byte{}, packet...), '\n')); err != nil {
		return fmt.Errorf("store packet %s: %w", key, err)
	}
	return nil
}

// JudgeFailure is a stored failed judge call: what it was to judge and
// why it failed.
type JudgeFailure struct {
	Key   string        `json:"key"`
	Mode  string        `json:"mode"`
	Role  string        `json:"role"`
	Judge digest.Digest `json:"judge"`
	// Name says what was to be judged: a cell, or a pair in one order.
	Name  string   `json:"name"`
	Cells []string `json:"cells"`
	Error string   `json:"error"`
}

// JudgeFailurePath is where the failure stored under key lives.
func (s *Store) JudgeFailurePath(key string) string {
	return filepath.Join(s.Dir, DirJudgeFailures, key+".json")
}

// JudgeFailure reads the failure stored under key.
func (s *Store) JudgeFailure(key string) (*JudgeFailure, bool, error) {
	var f JudgeFailure
	if ok, err := readSealed(s.JudgeFailurePath(key), &f); err != nil || !ok {
		return nil, false, err
	}
	return &f, true, nil
}

// PutJudgeFailure stores a failed judge call under its key, replacing the
// last one.
func (s *Store) PutJudgeFailure(f *JudgeFailure) error {
	if err := s.putSealed(s.JudgeFailurePath(f.Key), f); err != nil {
		return fmt.Errorf("store judge failure %s: %w", f.Key, err)
	}
	return nil
}

// ClearJudgeFailure removes the failure stored under key, once a call for
// it succeeded.
func (s *Store) ClearJudgeFailure(key string) error {
	if err := os.Remove(s.JudgeFailurePath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove judge failure %s: %w", key, err)
	}
	return nil
}

// JudgeUsage is what one judge call used, as far as the judge reports it.
type JudgeUsage struct {
	Model   string        `json:"model,omitempty"`
	Tokens  *grade.Tokens `json:"tokens,omitempty"`
	Seconds float64       `json:"seconds"`
	// Exchanges names the call's recorded exchange log
	// (store/exchanges/logs/HEX): each try's request and response, scrubbed.
	Exchanges digest.Digest `json:"exchanges,omitempty"`
	// Raw are the call's exchanges as made, until they are recorded; never
	// stored as such.
	Raw []gateway.RawExchange `json:"-"`
}

// ReadJudgementFile reads a judgement stored in file, such as a rejudgement;
// ok is false when there is none.
func ReadJudgementFile(file string) (*Judgement, bool, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var j Judgement
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", file, err)
	}
	return &j, true, nil
}
