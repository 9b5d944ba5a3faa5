package web

import (
	"runtime/debug"
	"sync"
)

// buildVersion is the version of this build, for what the studio tells
// clients about itself (MCP's serverInfo.version): the module's version
// when built from a tagged module, else "devel" with the VCS revision (and
// "-dirty" for uncommitted changes) when the build recorded one.
var buildVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
})

func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	v := "devel+" + rev[:min(len(rev), 12)]
	if dirty {
		v += "-dirty"
	}
	return v
}
