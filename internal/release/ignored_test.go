package main

import "testing"

// TestIgnoredDir: the go command's ignored directories, vendored code and
// the tooling under internal/ hold no released module; modules/… do.
func TestIgnoredDir(t *testing.T) {
	for d, want := range map[string]bool{
		"modules/etcd": false, "modules/kubernetes": false,
		"internal/tools/etcd": true, "internal/tools/kubeapiserver": true, "internal": true,
		"a/testdata/m": true, "vendor/x": true, ".cache/m": true, "_old/m": true,
		"internalish/m": false,
	} {
		if got := ignoredDir(d); got != want {
			t.Errorf("ignoredDir(%q) = %v, want %v", d, got, want)
		}
	}
}
