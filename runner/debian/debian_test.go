package debian

import (
	"strings"
	"testing"
)

// TestMirrorOf reads a deb822 sources list as a Debian host has it: the stanza that serves
// the release itself, not its -security suite nor a disabled or deb-src stanza.
func TestMirrorOf(t *testing.T) {
	sources := `Types: deb-src
URIs: http://src.example/debian
Suites: bookworm

Types: deb
Enabled: no
URIs: http://off.example/debian
Suites: bookworm

Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main

Types: deb
URIs: http://deb.debian.org/debian http://second.example/debian
Suites: bookworm bookworm-updates
Components: main
`
	got, err := mirrorOf(sources, "bookworm", "debian.sources")
	if err != nil || got != "http://deb.debian.org/debian" {
		t.Errorf("mirrorOf bookworm = %q, %v", got, err)
	}
	if _, err := mirrorOf(sources, "trixie", "debian.sources"); err == nil || !strings.Contains(err.Error(), "lists none for trixie") || !strings.Contains(err.Error(), MirrorEnv) {
		t.Errorf("mirrorOf trixie: %v, want none and the variable that sets one", err)
	}
}

// TestRootKey: a root's key and tag follow its inputs, not the order or repetition of its
// packages, and the base packages add nothing.
func TestRootKey(t *testing.T) {
	m := "http://deb.debian.org/debian/"
	a := NewRoot("bookworm", []string{"jq", "git", "ripgrep", "jq"}, m)
	b := NewRoot("bookworm", []string{"ripgrep", "jq"}, strings.TrimSuffix(m, "/"))
	if a.Key() != b.Key() || a.Tag() != b.Tag() || strings.Join(a.Packages, " ") != "jq ripgrep" {
		t.Errorf("same inputs, keys %s %s, packages %v", a.Key(), b.Key(), a.Packages)
	}
	for _, other := range []Root{
		NewRoot("trixie", []string{"jq", "ripgrep"}, m),
		NewRoot("bookworm", []string{"jq"}, m),
		NewRoot("bookworm", []string{"jq", "ripgrep"}, "http://other.example/debian"),
	} {
		if other.Key() == a.Key() {
			t.Errorf("%+v has the key of %+v", other, a)
		}
	}
	if !strings.HasPrefix(a.Tag(), Repo+":bookworm-") {
		t.Errorf("tag %s", a.Tag())
	}
	if got := strings.Join(a.Includes(), ","); got != "bash,ca-certificates,coreutils,git,jq,ripgrep" {
		t.Errorf("includes %s", got)
	}
}
