package pipeline

import (
	"runtime/debug"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"module version", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: rev}, "v1.4.0"},
		{"revision, modified", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "0123456789ab+dirty"},
		{"revision", &debug.BuildInfo{Settings: rev[:1]}, "0123456789ab"},
		{"nothing", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)"},
		{"no build info", nil, "(devel)"},
	} {
		if got := buildVersion(tc.bi, tc.bi != nil); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
