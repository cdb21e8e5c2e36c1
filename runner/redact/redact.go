package redact

import (
	"bytes"
	"io"
	"os"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// Redactor removes a run's secrets from what it stores: the real credential,
// the judges' and every variable the suite names in redactEnv.
type Redactor struct {
	secrets [][]byte
	// names says whose each secret is (a variable's name), for Scrub.
	names []string
}

// Secret is a value never to be stored, and the name of the host variable
// it came from, which is what a redaction records.
type Secret struct{ Name, Value string }

// New is the redactor of plan p's run: the values of the variables its suite
// names in redactEnv, and extra (a credential the run read). A value under
// four bytes is no secret worth the noise.
func New(p *plan.Plan, extra ...string) *Redactor {
	named := make([]Secret, len(extra))
	for i, s := range extra {
		named[i] = Secret{Name: "credential", Value: s}
	}
	return NewNamed(p, named...)
}

// NewNamed is New with the name of each extra secret's variable, so that
// Scrub can say whose value it removed.
func NewNamed(p *plan.Plan, extra ...Secret) *Redactor {
	r := &Redactor{}
	var all []Secret
	if p != nil {
		for _, name := range p.Suite.RedactEnv {
			all = append(all, Secret{Name: name, Value: os.Getenv(name)})
		}
	}
	for _, s := range append(all, extra...) {
		if len(s.Value) >= 4 {
			r.secrets = append(r.secrets, []byte(s.Value))
			r.names = append(r.names, s.Name)
		}
	}
	return r
}

// Scrub is b with every secret replaced by Redacted, and how many of each
// variable's values it removed, by name; nil when none.
func (r *Redactor) Scrub(b []byte) ([]byte, map[string]int) {
	if r == nil {
		return b, nil
	}
	var counts map[string]int
	for i, s := range r.secrets {
		if n := bytes.Count(b, s); n > 0 {
			if counts == nil {
				counts = map[string]int{}
			}
			counts[r.names[i]] += n
			b = bytes.ReplaceAll(b, s, []byte(Redacted))
		}
	}
	return b, counts
}

// Redacted marks where a secret was removed.
const Redacted = "[REDACTED]"

// Bytes is b with every secret replaced by Redacted.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for _, s := range r.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(Redacted))
		}
	}
	return b
}

// String is s with every secret replaced by Redacted.
func (r *Redactor) String(s string) string { return string(r.Bytes([]byte(s))) }

// Writer redacts a stream on its way to w, in constant memory: it holds back only the
// bytes that could still be the start of a secret. Close flushes them.
func (r *Redactor) Writer(w io.Writer) *Writer {
	longest := 0
	for _, s := range r.secrets {
		longest = max(longest, len(s))
	}
	return &Writer{w: w, secrets: r.secrets, keep: max(longest-1, 0)}
}

// Writer is a redactor's streaming writer.
type Writer struct {
	w       io.Writer
	secrets [][]byte
	keep    int // bytes held back: one less than the longest secret
	buf     []byte
	// redacted says a secret was removed.
	redacted bool
}

// Write redacts p on its way; it may hold back its end until more comes.
func (rw *Writer) Write(p []byte) (int, error) {
	if len(rw.secrets) == 0 {
		return rw.w.Write(p)
	}
	rw.buf = append(rw.buf, p...)
	if err := rw.flush(false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes out what can no longer be part of a secret (everything, at the end).
func (rw *Writer) flush(final bool) error {
	for {
		at, which := -1, -1
		for i, s := range rw.secrets {
			if j := bytes.Index(rw.buf, s); j >= 0 && (at < 0 || j < at) {
				at, which = j, i
			}
		}
		if at < 0 {
			break
		}
		rw.redacted = true
		if _, err := rw.w.Write(rw.buf[:at]); err != nil {
			return err
		}
		if _, err := io.WriteString(rw.w, Redacted); err != nil {
			return err
		}
		rw.buf = rw.buf[at+len(rw.secrets[which]):]
	}
	safe := len(rw.buf)
	if !final {
		safe = max(len(rw.buf)-rw.keep, 0)
	}
	if safe > 0 {
		if _, err := rw.w.Write(rw.buf[:safe]); err != nil {
			return err
		}
		rw.buf = append(rw.buf[:0], rw.buf[safe:]...)
	}
	return nil
}

// Redacted reports whether a secret was removed from what was written.
func (rw *Writer) Redacted() bool { return rw.redacted }

// Close writes what was held back.
func (rw *Writer) Close() error {
	if len(rw.secrets) == 0 {
		return nil
	}
	return rw.flush(true)
}
