package main

import (
	"fmt"
	"io"

	"github.com/fxelection/fxelection/fxelection/config"
)

// runValidate is "example-app validate --config FILE", as Caddy's
// "caddy validate": it parses the file (placeholders resolved, every
// module's settings decoded strictly and validated) and checks that the
// runtime "run" uses can run it, and stops there: no module is
// provisioned, no elector constructed, nothing dialled. A valid file gets
// one summary line on w; an invalid or unreadable one the same problems,
// one per line with their JSON paths, as running or reloading it would
// report (exit 2).
func runValidate(o options, w io.Writer) error {
	_, doc, err := loadConfig(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: valid: %s, %s, %s (nothing provisioned or dialled)\n", o.configFile,
		count(len(doc.Elections), "election"), count(backendModules(doc), "backend module"), count(len(doc.Extensions), "extension"))
	return nil
}

// backendModules counts the backend modules doc provisions: each backends
// entry once, each inline module once.
func backendModules(doc *config.Document) int {
	n := len(doc.Backends)
	for _, e := range doc.Elections {
		if e.Backend.Module != nil {
			n++
		}
	}
	return n
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
