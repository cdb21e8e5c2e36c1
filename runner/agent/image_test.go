package agent

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/docker"
)

// agentImageEngine returns an engine for the agent image tests, or skips them when the
// engine, npm or bash-static is missing (and fails under CI=true).
func agentImageEngine(t *testing.T) *docker.Engine {
	t.Helper()
	miss := t.Skipf
	if os.Getenv("CI") == "true" {
		miss = t.Fatalf
	}
	if testing.Short() {
		t.Skip("agent images: large downloads and builds")
	}
	if out, err := exec.Command("npm", "--version").CombinedOutput(); err != nil {
		miss("npm does not work: %v %s", err, out)
	}
	if err := docker.CheckStatic(bashStaticPath); err != nil {
		miss("no static bash at %s (%v): apt-get install bash-static", bashStaticPath, err)
	}
	e, err := docker.NewEngine(context.Background())
	if err != nil {
		miss("no Docker engine: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

type agentTestLog struct{ t *testing.T }

func (l agentTestLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestAgentImage builds each agent's image from its npm packages (cached after the first
// run) and starts the CLI in a network-less container as uid 1000.
func TestAgentImage(t *testing.T) {
	e := agentImageEngine(t)
	for _, tc := range []struct{ agent, version string }{
		{ClaudeCode, "2.1.332 (Claude Code)"},
		{Codex, "codex-cli 0.171.0"},
		{OpenCode, "1.18.33"},
		{Pi, "0.73.1"},
		{Gemini, "0.61.0"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			ctx := context.Background()
			t0 := time.Now()
			ref, err := BuildImage(ctx, e, tc.agent, "", agentTestLog{t})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("image %s ready in %s", ref, time.Since(t0).Round(100*time.Millisecond))
			if want := ImageRepo(tc.agent) + ":" + Version(tc.agent) + "-"; !strings.HasPrefix(ref, want) || len(ref) != len(want)+12 {
				t.Errorf("ref = %s, want %sDIGEST12", ref, want)
			}
			if _, ok, err := e.ImageExists(ctx, ImageRepo(tc.agent)+":"+Version(tc.agent)); err != nil || !ok {
				t.Errorf("version tag missing: %v", err)
			}
			bin := map[string]string{ClaudeCode: "claude", Codex: "codex", OpenCode: "opencode", Pi: "pi", Gemini: "gemini"}[tc.agent]
			run := func(env []string, cmd ...string) *docker.ContainerOutcome {
				t.Helper()
				out, err := e.RunContainer(ctx, docker.ContainerSpec{
					Image: ref, Cmd: cmd, Env: env, User: "1000:1000", WorkingDir: "/workspace",
					Memory: 1 << 30, PidsLimit: 256, Timeout: 2 * time.Minute, OutputCap: 1 << 20,
				})
				if err != nil {
					t.Fatal(err)
				}
				if out.ExitCode != 0 || out.TimedOut {
					t.Fatalf("%q: exit %d (timed out %v)\nstdout: %s\nstderr: %s", cmd, out.ExitCode, out.TimedOut, out.Stdout, out.Stderr)
				}
				return out
			}
			t1 := time.Now()
			out := run(nil, bin, "--version")
			printed := out.Stdout
			if tc.agent == Pi {
				printed = out.Stderr // Pi prints its version there
			}
			if got := strings.TrimSpace(string(printed)); got != tc.version {
				t.Errorf("%s --version = %q, want %q (stderr %q)", bin, got, tc.version, out.Stderr)
			}
			t.Logf("%s --version: %q in %s", bin, strings.TrimSpace(string(printed)), time.Since(t1).Round(10*time.Millisecond))

			// The environment an agent's shell commands get: bash with a UTF-8 locale
			// (Codex sets LC_ALL), the agent user, writable home, workspace and /tmp.
			out = run([]string{"LC_ALL=C.UTF-8"}, "bash", "-lc",
				`id -u; echo "$HOME"; touch "$HOME/.x" /workspace/.y /tmp/.z && echo writable; printf '%s\n' "é" | wc -m; ls /bin/sh >/dev/null && echo busybox`)
			if got, want := string(out.Stdout), "1000\n/home/agent\nwritable\n2\nbusybox\n"; got != want {
				t.Errorf("shell check: stdout %q, want %q", got, want)
			}
			if len(out.Stderr) > 0 {
				t.Errorf("shell check: stderr %q (a missing locale warns here)", out.Stderr)
			}
		})
	}
}

func TestAgentImagePlatformDependency(t *testing.T) {
	pj := &packageJSON{OptionalDependencies: map[string]string{
		"@anthropic-ai/claude-code-linux-x64": "2.1.332",
		"@openai/codex-linux-x64":             "npm:@openai/codex@0.171.0-linux-x64",
		"bad":                                 "^1.2.0",
	}}
	for dep, want := range map[string]string{
		"@anthropic-ai/claude-code-linux-x64": "@anthropic-ai/claude-code-linux-x64@2.1.332",
		"@openai/codex-linux-x64":             "@openai/codex@0.171.0-linux-x64",
	} {
		pkg, ver, err := platformDependency(pj, dep)
		if err != nil || pkg+"@"+ver != want {
			t.Errorf("%s: %s@%s %v, want %s", dep, pkg, ver, err, want)
		}
	}
	for _, dep := range []string{"bad", "missing"} {
		if _, _, err := platformDependency(pj, dep); err == nil {
			t.Errorf("%s: no error", dep)
		}
	}
	if pkg, _, _ := platformDependency(pj, "@anthropic-ai/claude-code-linux-x64"); pkg != "@anthropic-ai/claude-code-linux-x64" {
		t.Errorf("plain dependency resolved to package %s", pkg)
	}
}

// A dynamically linked host program gets its loader and libc; a static one needs nothing.
func TestAgentImageHostLibraries(t *testing.T) {
	libs, interp, err := hostLibraries(docker.BusyboxPath)
	if err != nil || interp != "" || libs != nil {
		t.Errorf("static busybox: %v %q %v", libs, interp, err)
	}
	ls, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls")
	}
	libs, interp, err = hostLibraries(ls)
	if err != nil {
		t.Fatal(err)
	}
	if interp == "" {
		t.Skipf("%s is static", ls)
	}
	if libs["libc.so.6"] == "" {
		t.Errorf("%s: libc.so.6 not found among %v", ls, libs)
	}
	bc := docker.NewBuildContext("FROM scratch\nADD " + docker.LayerTar + " /\n")
	if err := addLibraries(bc, libs, interp); err != nil {
		t.Fatal(err)
	}
	ip, _ := docker.ImagePath(interp)
	if !bc.Has(ip) {
		t.Errorf("loader %s not in the image", interp)
	}
	if !bc.Has(imageLibDir + "/libc.so.6") {
		t.Errorf("libc.so.6 not in %s", imageLibDir)
	}
}
