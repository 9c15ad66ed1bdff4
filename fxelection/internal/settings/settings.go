// Package settings lists a struct type's settings as configuration
// documents name them (json tags, embedded structs promoted): shared by
// the document decoder (package config) and the module kit (package
// modkit), which must not depend on each other's weight.
package settings

import (
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Field is one setting of a struct type.
type Field struct {
	// Key is the setting's key: its json tag's name, or the Go name.
	Key string
	// Index is the field's index sequence (reflect.Value.FieldByIndex).
	Index []int
	// Required is set by the tag `config:"required"`.
	Required bool
	// OmitEmpty is set by the json tag option omitempty.
	OmitEmpty bool
}

// Fields are a struct type's settings.
type Fields struct {
	// List is every setting, in declaration order (embedded structs'
	// fields where they are embedded).
	List []Field
	// ByKey finds a setting by its key.
	ByKey map[string]Field
}

var cache sync.Map // reflect.Type → *Fields

// Of lists struct type t's settings: exported fields named by their json
// tag (or their Go name), with embedded structs' fields flattened (the
// shallower field wins a name clash). `json:"-"` fields are skipped.
func Of(t reflect.Type) *Fields {
	if fs, ok := cache.Load(t); ok {
		return fs.(*Fields)
	}
	fs := &Fields{ByKey: map[string]Field{}}
	type level struct {
		t     reflect.Type
		index []int
	}
	queue := []level{{t, nil}}
	for len(queue) > 0 {
		var next []level
		for _, l := range queue {
			for i := range l.t.NumField() {
				sf := l.t.Field(i)
				tag := sf.Tag.Get("json")
				name, _, _ := strings.Cut(tag, ",")
				if name == "-" && tag == "-" {
					continue
				}
				index := append(append([]int(nil), l.index...), i)
				if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
					next = append(next, level{sf.Type, index})
					continue
				}
				if !sf.IsExported() {
					continue
				}
				if name == "" {
					name = sf.Name
				}
				if _, taken := fs.ByKey[name]; taken {
					continue
				}
				f := Field{Key: name, Index: index, Required: HasOpt(sf.Tag.Get("config"), "required"),
					OmitEmpty: HasOpt(tag, "omitempty")}
				fs.ByKey[name] = f
				fs.List = append(fs.List, f)
			}
		}
		queue = next
	}
	// Declaration order, embedded structs' fields where they are embedded
	// (as encoding/json orders them).
	slices.SortStableFunc(fs.List, func(a, b Field) int { return slices.Compare(a.Index, b.Index) })
	actual, _ := cache.LoadOrStore(t, fs)
	return actual.(*Fields)
}

// HasOpt reports whether the comma-separated tag has option opt.
func HasOpt(tag, opt string) bool {
	for o := range strings.SplitSeq(tag, ",") {
		if strings.TrimSpace(o) == opt {
			return true
		}
	}
	return false
}
