package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	cases := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"from a Git checkout", debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "chorus", Version: "v0.0.0-20261122222541-e34ea95d49eb"},
			Settings: []debug.BuildSetting{
				{Key: "-trimpath", Value: "true"},
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "e34ea95d49eb7050aa89eeefabffea4780f0cecb"},
				{Key: "vcs.time", Value: "2026-11-22T22:25:41Z"},
				{Key: "vcs.modified", Value: "true"},
			},
		}, "chorus v0.0.0-20261122222541-e34ea95d49eb\n" +
			"revision e34ea95d49eb7050aa89eeefabffea4780f0cecb (modified)\n" +
			"committed 2026-11-22T22:25:41Z\n" +
			"built with go1.26.8\n"},
		{"clean checkout", debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "chorus", Version: "v1.2.0"},
			Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc"},
				{Key: "vcs.modified", Value: "false"},
			},
		}, "chorus v1.2.0\nrevision abc\nbuilt with go1.26.8\n"},
		{"no VCS, no version", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "chorus"}},
			"chorus (devel)\nbuilt with go1.26.8\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := FromBuildInfo(&tc.bi).String(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestCurrent(t *testing.T) {
	got := Current()
	if got.GoVersion != runtime.Version() || got.Version == "" {
		t.Errorf("Current() = %+v, want the version set and Go %s", got, runtime.Version())
	}
}
