package pipeline

import (
	"runtime/debug"
	"sync"
)

// Version is skillgate's own version, as the binary was built: its module
// version, else the VCS revision it was built from ("+dirty" when the work
// tree had changes), else "(devel)". Every rollout and report records it,
// so a result names the harness that made it.
func Version() string {
	versionOnce.Do(func() { version = buildVersion(debug.ReadBuildInfo()) })
	return version
}

var (
	versionOnce sync.Once
	version     string
)

func buildVersion(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "(devel)"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "(devel)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "+dirty"
	}
	return rev
}
