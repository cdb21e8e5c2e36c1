package runner

import (
	"bytes"
	"io"
	"os"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// writer redacts a stream on its way to w, in constant memory: it holds back only the
// bytes that could still be the start of a secret. Close flushes them.
func (r *redactor) writer(w io.Writer) io.WriteCloser {
	longest := 0
	for _, s := range r.secrets {
		longest = max(longest, len(s))
	}
	return &redactWriter{w: w, secrets: r.secrets, keep: max(longest-1, 0)}
}

// redactWriter is a redactor's streaming writer.
type redactWriter struct {
	w       io.Writer
	secrets [][]byte
	keep    int // bytes held back: one less than the longest secret
	buf     []byte
	// redacted says a secret was removed.
	redacted bool
}

func (rw *redactWriter) Write(p []byte) (int, error) {
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
func (rw *redactWriter) flush(final bool) error {
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

// Close writes what was held back.
func (rw *redactWriter) Close() error {
	if len(rw.secrets) == 0 {
		return nil
	}
	return rw.flush(true)
}

// redactor removes secrets from everything stored.
type redactor struct{ secrets [][]byte }

func newRedactor(p *plan.Plan, extra ...string) *redactor {
	r := &redactor{}
	for _, name := range p.Suite.RedactEnv {
		extra = append(extra, os.Getenv(name))
	}
	for _, s := range extra {
		if len(s) >= 4 {
			r.secrets = append(r.secrets, []byte(s))
		}
	}
	return r
}

// Redacted marks where a secret was removed.
const Redacted = "[REDACTED]"

func (r *redactor) bytes(b []byte) []byte {
	for _, s := range r.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(Redacted))
		}
	}
	return b
}

func (r *redactor) string(s string) string { return string(r.bytes([]byte(s))) }

// file redacts a stored file in place, if it holds a secret.
func (r *redactor) file(p string) error {
	if len(r.secrets) == 0 {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if red := r.bytes(b); !bytes.Equal(red, b) {
		return os.WriteFile(p, red, 0o644)
	}
	return nil
}
