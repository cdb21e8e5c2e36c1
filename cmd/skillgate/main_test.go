package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	cuecmd "cuelang.org/go/cmd/cue/cmd"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as both skillgate and plain cue inside
// scripts, so `cue vet` checks what `skillgate schema` vendors without a cue
// install.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"skillgate": func() { os.Exit(run(os.Args)) },
		"cue":       func() { os.Exit(cuecmd.Main()) },
		// storegrades lays out a run folder with stored grades, no Docker.
		"storegrades": func() { os.Exit(storeGrades(os.Args[1:])) },
	})
}

// TestScripts runs testdata/script/*.txtar; UPDATE_GOLDEN=1 rewrites the
// golden files their cmp commands compare with.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "../../testdata/script",
		UpdateScripts: os.Getenv("UPDATE_GOLDEN") != "",
		Cmds:          map[string]func(*testscript.TestScript, bool, []string){"standin": standIn, "registry": imageRegistry, "sametimes": sameTimes, "skilltrees": skillTrees, "tamper": tamper, "reseal": reseal},
		Condition:     condition,
		Setup: func(e *testscript.Env) error {
			work := e.Getenv("WORK")
			// git commits in the diff scripts need an identity and must not
			// read the developer's configuration.
			e.Setenv("HOME", work)
			e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			e.Setenv("GIT_AUTHOR_NAME", "skillgate test")
			e.Setenv("GIT_AUTHOR_EMAIL", "test@skillgate.invalid")
			e.Setenv("GIT_COMMITTER_NAME", "skillgate test")
			e.Setenv("GIT_COMMITTER_EMAIL", "test@skillgate.invalid")
			// Keep cue's module cache inside the script's folder.
			e.Setenv("CUE_CACHE_DIR", work+"/.cache/cue")
			return nil
		},
	})
}

// condition answers a script's [docker]: whether a Docker engine answers. On CI
// (CI set) it must: a script that needs the engine fails there rather than skip.
func condition(cond string) (bool, error) {
	if cond != "docker" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").Run(); err != nil {
		if os.Getenv("CI") != "" {
			return false, fmt.Errorf("CI needs a Docker engine: docker info: %w", err)
		}
		return false, nil
	}
	return true, nil
}

// imageRegistry is `registry VAR`: an image registry served by the test on
// 127.0.0.1 over plain HTTP until the script ends, its HOST:PORT in $VAR; a
// push to it is one the Docker engine makes (127.0.0.0/8 is insecure by
// default) and no request leaves the machine.
func imageRegistry(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: registry VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close() })
	ts.Setenv(args[0], ln.Addr().String())
}

// standIn is the script command `standin STATUS TYPE MESSAGE FILE...`: it starts a
// STAND-IN provider on 127.0.0.1, not a model, that answers every request with STATUS
// and Anthropic's error JSON of TYPE and MESSAGE, for the rest of the script, and
// writes its URL over STANDIN_URL in each FILE.
func standIn(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 {
		ts.Fatalf("usage: standin STATUS TYPE MESSAGE FILE...")
	}
	status, err := strconv.Atoi(args[0])
	ts.Check(err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, args[1], args[2])
	}))
	ts.Defer(srv.Close)
	for _, f := range args[3:] {
		ts.Check(os.WriteFile(ts.MkAbs(f), []byte(strings.ReplaceAll(ts.ReadFile(f), "STANDIN_URL", srv.URL)), 0o644))
	}
}
