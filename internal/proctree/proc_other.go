//go:build unix && !linux

package proctree

import "errors"

// Subreaper is Linux's: elsewhere it fails with errors.ErrUnsupported.
func Subreaper() error { return errors.ErrUnsupported }

// NotDumpable is Linux's: elsewhere it fails with errors.ErrUnsupported.
func NotDumpable() error { return errors.ErrUnsupported }

// scan needs Linux's /proc: elsewhere only process groups count.
func scan() (map[int]proc, bool) { return nil, false }

func hasMark(int, string) bool { return false }

func selfChildren() ([]int, bool) { return nil, false }

func readStat(int) (proc, bool) { return proc{}, false }

func childrenOf(int) []int { return nil }
