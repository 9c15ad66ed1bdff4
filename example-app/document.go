package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

// flagsFxName is the fx name tag of the one election the flags describe
// (the election name need not fit a tag).
const flagsFxName = "example-app"

// flagsElection is the JSON path of the flags' one election.
const flagsElection = "elections[0]"

// electionKeyFlags maps a document election's keys to the flags that set
// them.
var electionKeyFlags = map[string]string{
	"name": "election", "identity": "id", "metadata": "http", "lease_duration": "lease",
	"renew_deadline": "renew-deadline", "retry_period": "retry", "max_backoff": "retry",
	"stop_timeout": "stop-timeout", "backend": "backend", "fx_name": "election",
	"health": "health-cmd", "health.command": "health-cmd", "health.interval": "health-interval",
	"health.threshold": "health-threshold",
}

// backendModuleID is the module ID for a --backend short name.
func backendModuleID(name string) modkit.ModuleID {
	return modkit.ModuleID(modkit.BackendsNamespace + "." + name)
}

// backendNames are the --backend choices: the last label of every
// registered module in modkit.BackendsNamespace, sorted.
func backendNames() []string {
	var out []string
	for _, m := range modkit.Modules() {
		if m.ID.Namespace() == modkit.BackendsNamespace {
			out = append(out, m.ID.Name())
		}
	}
	return out
}

// printModules writes every registered module, sorted by ID, with its
// one-line doc (`example-app modules`).
func printModules(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range modkit.Modules() {
		fmt.Fprintf(tw, "%s\t%s\n", m.ID, m.Doc)
	}
	return tw.Flush()
}

// documentJSON is the configuration document the flags describe: one
// election, its timing from the timing flags, its backend module from
// --backend, with the settings the flag table's backend and setting
// columns name (numbers for int flags, booleans for bool flags, strings
// otherwise; empty strings left out). It holds secrets: never log it.
func (o options) documentJSON() ([]byte, error) {
	for name, v := range map[string]string{"election": o.election, "id": o.id, "http": o.httpAddr} {
		if err := o.noPlaceholder(name, v); err != nil {
			return nil, err
		}
	}
	backend := map[string]any{"module": string(backendModuleID(o.backend))}
	settings := o.settings()
	for _, d := range o.flagTable() {
		if d.backend != o.backend || d.setting == "" {
			continue
		}
		v := settings[d.setting]
		switch d.value.(type) {
		case intFlag:
			backend[d.setting] = json.Number(v)
		case boolFlag:
			backend[d.setting] = v == "true"
		default:
			if v == "" {
				continue
			}
			if err := o.noPlaceholder(d.name, v); err != nil {
				return nil, err
			}
			backend[d.setting] = v
		}
	}
	election := map[string]any{
		"name":           o.election,
		"fx_name":        flagsFxName,
		"identity":       o.id,
		"metadata":       map[string]string{"http": o.httpAddr},
		"lease_duration": o.lease.String(),
		"renew_deadline": o.renewDeadline.String(),
		"retry_period":   o.retry.String(),
		"stop_timeout":   o.stopTimeout.String(),
		"backend":        backend,
	}
	if o.healthCmd != "" {
		if err := o.noPlaceholder("health-cmd", o.healthCmd); err != nil {
			return nil, err
		}
		health := map[string]any{"command": []string{"/bin/sh", "-c", o.healthCmd}}
		if o.healthInterval > 0 {
			health["interval"] = o.healthInterval.String()
		}
		if o.healthThreshold > 0 {
			health["threshold"] = o.healthThreshold
		}
		election["health"] = health
	}
	return json.Marshal(map[string]any{"elections": []any{election}})
}

// settings are the chosen backend's settings as the flags state them, by
// setting name, as text (documentJSON gives them their JSON types). They
// hold secrets: never log them.
func (o options) settings() map[string]string {
	s := map[string]string{}
	for _, d := range o.flagTable() {
		if d.backend != o.backend || d.setting == "" {
			continue
		}
		v := d.value.String()
		if d.toSetting != nil {
			v = d.toSetting(v)
		}
		s[d.setting] = v
	}
	return s
}

// noPlaceholder rejects a flag value that a document would read as a
// placeholder: flag values are used as they are, so {env.NAME} and
// {file.PATH} work only in --config files.
func (o options) noPlaceholder(flag, v string) error {
	if strings.Contains(v, "{env.") || strings.Contains(v, "{file.") {
		return usagef("%s: placeholders ({env.NAME}, {file.PATH}) work only in --config files", o.label(flag))
	}
	return nil
}

// flagLoader parses the flags' document: it never substitutes a
// placeholder (documentJSON rejects them; this is a second guard).
var flagLoader = config.Loader{
	LookupEnv: func(string) (string, bool) { return "", false },
	ReadFile:  func(string) ([]byte, error) { return nil, errors.New("not read for flags") },
}

// document is the flags' configuration document, parsed and validated by
// the config package as a --config file would be. Its errors are usage
// errors naming the flag.
func (o options) document() (*config.Document, error) {
	raw, err := o.documentJSON()
	if err != nil {
		return nil, err
	}
	doc, err := flagLoader.Parse(raw)
	if err != nil {
		return nil, usageError{o.documentProblem(err)}
	}
	return doc, nil
}

// documentProblem turns an error from the config path (one or more
// *config.PathError) into one line naming the flag behind the first
// error's JSON path: elections[0].backend.addr → --redis-addr,
// elections[0].lease_duration → --lease. Secrets are withheld.
func (o options) documentProblem(err error) string {
	var pe *config.PathError
	if !errors.As(err, &pe) {
		return o.settingProblem(err)
	}
	path, msg := pe.Path, pe.Err.Error()
	bpath := flagsElection + ".backend"
	var line string
	switch {
	case path == bpath:
		// A module's own Validate error, prefixed with its ID.
		msg = strings.TrimPrefix(msg, string(backendModuleID(o.backend))+": ")
		return o.settingProblem(errors.New(msg))
	case strings.HasPrefix(path, bpath+"."):
		key := strings.TrimPrefix(path, bpath+".")
		if flag := o.settingFlag(key); flag != "" {
			line = o.label(flag) + ": " + msg
		} else {
			line = "--backend " + o.backend + ": " + key + ": " + msg
		}
	case strings.HasPrefix(path, flagsElection+"."):
		key := strings.TrimPrefix(path, flagsElection+".")
		if strings.HasPrefix(msg, "fxelection: ") { // Config.Validate
			return o.coreProblem(pe.Err)
		}
		if flag, ok := electionKeyFlags[key]; ok {
			line = o.label(flag) + ": " + msg
		} else {
			line = key + ": " + msg
		}
	default:
		line = "--backend " + o.backend + ": " + path + ": " + msg
	}
	return oneLine(backendkit.RedactText(line, o.secrets()...))
}

// settingFlag is the flag that feeds setting key of the chosen backend, or
// "".
func (o options) settingFlag(key string) string {
	for _, d := range o.flagTable() {
		if d.backend == o.backend && d.setting == key {
			return d.name
		}
	}
	return ""
}
