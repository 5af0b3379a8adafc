// Package version tells which build of Chorus is running, from what the Go
// toolchain recorded in the binary: the module version, the VCS revision and
// its time (when built in a Git checkout), and the Go version.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info describes one build.
type Info struct {
	Version   string // module version; "(devel)" for a build with none
	Revision  string // VCS commit; empty when the build recorded none
	Time      string // commit time, RFC 3339; empty when unknown
	Modified  bool   // built from a checkout with uncommitted changes
	GoVersion string // the toolchain that built it, "go1.26.8"
}

// Current is the running binary's build.
func Current() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "(devel)", GoVersion: runtime.Version()}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo reads a build's description from what the toolchain
// recorded.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	info := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	if info.GoVersion == "" {
		info.GoVersion = runtime.Version()
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is what `chorus -version` prints: one line per fact, those the
// build did not record left out.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chorus %s\n", i.Version)
	if i.Revision != "" {
		fmt.Fprintf(&b, "revision %s", i.Revision)
		if i.Modified {
			b.WriteString(" (modified)")
		}
		b.WriteString("\n")
	}
	if i.Time != "" {
		fmt.Fprintf(&b, "committed %s\n", i.Time)
	}
	fmt.Fprintf(&b, "built with %s\n", i.GoVersion)
	return b.String()
}
