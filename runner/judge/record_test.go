package judge

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/gateway"
	"github.com/skillgate/skillgate/runner/redact"
	"github.com/skillgate/skillgate/runner/store"
)

// TestJudgeCallsRecorded: a real judge's call (to a STAND-IN provider on
// 127.0.0.1, not a model), a first try refused with 529 and a second
// answered, is recorded in the run folder as one exchange log that the
// judgement names, both tries in order, the key out of every stored byte.
func TestJudgeCallsRecorded(t *testing.T) {
	const key = "sk-judge-secret-5566"
	tries := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tries++
		w.Header().Set("Content-Type", "application/json")
		if tries == 1 {
			w.WriteHeader(529)
			fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		fmt.Fprint(w, `{"model":"claude-x","content":[{"type":"text","text":"{\"criteria\":[{\"criterion\":0,\"pass\":true,\"evidence\":\"ok\"}]}"}],"usage":{"input_tokens":12,"output_tokens":3}}`)
	}))
	defer srv.Close()
	out := t.TempDir()
	var stored *store.Judgement
	c := &conversation{redact: redact.NewNamed(nil, redact.Secret{Name: "JUDGE_KEY", Value: key}),
		record: &gateway.Recorder{Out: out}, provider: "anthropic",
		put: func(jd *store.Judgement) error { stored = jd; return nil }}
	j := &messagesJudge{client: srv.Client(), url: srv.URL + "/v1/messages", key: key, model: "m", timeout: 10 * time.Second, real: true}
	jd, err := c.ask(context.Background(), j, question{key: "k1", mode: "rubric", role: store.RoleJudge, name: "a cell", criteria: 1,
		template: "Judge: {{packet}}", packet: []byte(`{"task":"x"}`)})
	if err != nil || stored == nil || len(jd.Criteria) != 1 {
		t.Fatalf("%v %+v", err, jd)
	}
	if jd.Usage.Exchanges == "" || jd.Usage.Raw != nil {
		t.Fatalf("usage %+v", jd.Usage)
	}
	l, err := gateway.ReadLog(out, jd.Usage.Exchanges)
	if err != nil {
		t.Fatal(err)
	}
	if l.Cell != "judge k1" || len(l.Exchanges) != 2 || l.Exchanges[0].Status != 529 || l.Exchanges[1].Status != 200 || l.Exchanges[1].Path != "/v1/messages" {
		t.Fatalf("log %+v", l)
	}
	req, err := gateway.ReadBody(out, l.Exchanges[1].Request.Digest)
	if err != nil || !strings.Contains(string(req), `Judge: {\"task\":\"x\"}`) || l.Exchanges[1].Request.Headers.Get("X-Api-Key") != redact.Redacted {
		t.Errorf("request %s %v, headers %v", req, err, l.Exchanges[1].Request.Headers)
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(key)) {
				t.Errorf("%s holds the key", p)
			}
		}
		return err
	})
}
