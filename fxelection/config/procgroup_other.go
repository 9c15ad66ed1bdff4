//go:build !unix

package config

import "os/exec"

// ownGroup: without process groups, the context ending kills the command
// itself (exec.CommandContext's default).
func ownGroup(*exec.Cmd) {}

// killGroup has nothing to do without process groups.
func killGroup(*exec.Cmd) {}
