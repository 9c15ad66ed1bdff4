package config

import (
	"github.com/fxelection/fxelection/fxelection/internal/settings"

	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on documents.
const (
	// MaxDepth is the deepest nesting of arrays and objects accepted.
	MaxDepth = 64
	// maxErrors is how many errors one decode reports before giving up.
	maxErrors = 50
)

// moduleKey is the reserved key naming a module in a module object.
const moduleKey = "module"

// MaxValues bounds how many values (objects, arrays and scalars, YAML
// aliases counted at every use) one document may hold.
const MaxValues = 1 << 20

// ErrTooLarge means a document is over its budget: more than
// MaxDocumentBytes of keys and values once YAML aliases and placeholders
// are expanded, or more than MaxValues values.
var ErrTooLarge = errors.New("document too large")

// budget is one document's allowance, shared by parsing, alias expansion
// and placeholder expansion, so the expanded document is bounded as the
// raw one is.
type budget struct {
	bytes, values int
}

func newBudget() *budget { return &budget{bytes: MaxDocumentBytes, values: MaxValues} }

// charge takes values values and n bytes, or returns the ErrTooLarge error
// saying which limit the document passed.
func (b *budget) charge(values, n int) error {
	b.values -= values
	b.bytes -= n
	switch {
	case b.values < 0:
		return fmt.Errorf("%w: more than %d values", ErrTooLarge, MaxValues)
	case b.bytes < 0:
		return fmt.Errorf("%w: more than %d bytes of keys and values (YAML aliases and placeholders expanded)", ErrTooLarge, MaxDocumentBytes)
	}
	return nil
}

// object is a decoded JSON object that remembers its key order, so errors
// come out in document order.
type object struct {
	keys []string
	vals map[string]any
}

// parseTree decodes data into a tree of nil, bool, json.Number, string,
// []any and *object, rejecting invalid UTF-8, duplicate keys, nesting deeper
// than MaxDepth, trailing data and documents over budget. Errors are
// *PathErrors.
func parseTree(data []byte, b *budget) (any, error) {
	if len(data) > MaxDocumentBytes {
		return nil, pathErr("", fmt.Errorf("%w: larger than %d bytes", ErrTooLarge, MaxDocumentBytes))
	}
	if !utf8.Valid(data) {
		return nil, pathErr("", fmt.Errorf("%w: document is not valid UTF-8", ErrSyntax))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, data, b, nil, 0)
	if err != nil {
		return nil, err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		for end < int64(len(data)) && strings.IndexByte(" \t\r\n", data[end]) >= 0 {
			end++
		}
		return nil, pathErr("", fmt.Errorf("%w at %s: data after the document", ErrSyntax, position(data, end)))
	}
	return v, nil
}

// scalarBytes is what a scalar tree value costs the budget beyond its one
// value.
func scalarBytes(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case json.Number:
		return len(v)
	}
	return 0
}

func parseValue(dec *json.Decoder, data []byte, b *budget, p *path, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxErr(data, dec, p, err)
	}
	if err := b.charge(1, 1+scalarBytes(tok)); err != nil {
		return nil, pathErr(p.String(), err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // nil, bool, json.Number or string
	}
	if depth >= MaxDepth {
		return nil, pathErr(p.String(), fmt.Errorf("%w: nested deeper than %d levels", ErrSyntax, MaxDepth))
	}
	switch d {
	case '[':
		list := []any{}
		for dec.More() {
			v, err := parseValue(dec, data, b, p.index(len(list)), depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, syntaxErr(data, dec, p, err)
		}
		return list, nil
	default: // '{': Token never returns a closing delimiter here
		obj := &object{vals: map[string]any{}}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, syntaxErr(data, dec, p, err)
			}
			key := tok.(string) // the decoder guarantees object keys are strings
			kp := p.at(key)
			if err := b.charge(0, 1+len(key)); err != nil {
				return nil, pathErr(kp.String(), err)
			}
			if _, dup := obj.vals[key]; dup {
				return nil, pathErr(kp.String(), ErrDuplicateKey)
			}
			v, err := parseValue(dec, data, b, kp, depth+1)
			if err != nil {
				return nil, err
			}
			obj.keys = append(obj.keys, key)
			obj.vals[key] = v
		}
		if _, err := dec.Token(); err != nil {
			return nil, syntaxErr(data, dec, p, err)
		}
		return obj, nil
	}
}

func syntaxErr(data []byte, dec *json.Decoder, p *path, err error) error {
	off := dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	msg := "unexpected end of document"
	if err != io.EOF && err != io.ErrUnexpectedEOF {
		msg = strings.TrimPrefix(err.Error(), "json: ")
	}
	return pathErr(p.String(), fmt.Errorf("%w at %s: %s", ErrSyntax, position(data, off), msg))
}

// position turns a byte offset into "line L, column C".
func position(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return fmt.Sprintf("line %d, column %d", line, col)
}

// jsonKind names a tree value's JSON type for error messages.
func jsonKind(n any) string {
	switch n.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// plain converts a tree value into what encoding/json would produce
// (map[string]any, []any, string, bool, json.Number, nil), replacing
// placeholders in its strings (not its keys) as d does.
func (d *decoder) plain(p *path, n any) any {
	switch n := n.(type) {
	case *object:
		m := make(map[string]any, len(n.vals))
		for _, k := range n.keys {
			m[k] = d.plain(p.at(k), n.vals[k])
		}
		return m
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			out[i] = d.plain(p.index(i), v)
		}
		return out
	case string:
		s, _ := d.str(p, n)
		return s
	default:
		return n
	}
}

// treeDecoder is implemented by this package's types that decode themselves
// from a tree, reporting errors (with sub-paths) to d.
type treeDecoder interface {
	decodeTree(d *decoder, p *path, n any)
}

// decoder decodes a tree into Go values strictly, collecting every error.
// With a replacer it replaces placeholders in each string it stores, so
// only strings under keys the types accept are ever expanded.
type decoder struct {
	errs    []error
	secrets []string // values of every Secret decoded
	r       *replacer
	stopped bool // the budget ran out: decode nothing more
}

func (d *decoder) fail(p *path, err error) {
	switch {
	case len(d.errs) < maxErrors:
		d.errs = append(d.errs, pathErr(p.String(), err))
	case len(d.errs) == maxErrors:
		d.errs = append(d.errs, pathErr("", fmt.Errorf("too many errors; stopped after %d", maxErrors)))
	}
}

// str returns s with its placeholders replaced (s itself without a
// replacer); ok is false, and the error recorded, if one cannot be.
func (d *decoder) str(p *path, s string) (string, bool) {
	if d.r == nil {
		return s, true
	}
	if d.stopped {
		return s, false
	}
	out, err := d.r.replace(s)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			d.stopped = true
		}
		d.fail(p, err)
		return s, false
	}
	return out, true
}

func (d *decoder) err() error { return errors.Join(d.errs...) }

func wrongType(want string, n any) error {
	return fmt.Errorf("%w: want %s, got %s", ErrWrongType, want, jsonKind(n))
}

var durationType = reflect.TypeFor[time.Duration]()

// string returns n's string with its placeholders replaced, or reports
// that n is not a string (want names the expected type).
func (d *decoder) string(p *path, n any, want string) (string, bool) {
	s, ok := n.(string)
	if !ok {
		d.fail(p, wrongType(want, n))
		return "", false
	}
	return d.str(p, s)
}

// duration decodes a duration string ("1.5s") into *out (time.Duration
// and modkit.Duration settings); numbers are refused.
func (d *decoder) duration(p *path, n any, out *time.Duration) {
	s, ok := d.string(p, n, `a duration string such as "1.5s"`)
	if !ok {
		return
	}
	var v modkit.Duration
	if err := v.UnmarshalText([]byte(s)); err != nil {
		d.fail(p, err)
		return
	}
	*out = time.Duration(v)
}

// decode stores tree value n into v (settable), reporting errors at p.
// JSON null leaves v unchanged.
func (d *decoder) decode(p *path, n any, v reflect.Value) {
	if n == nil || d.stopped {
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(p, n, v.Elem())
		return
	}
	if v.CanAddr() && v.Addr().CanInterface() {
		switch u := v.Addr().Interface().(type) {
		case treeDecoder:
			u.decodeTree(d, p, n)
			return
		case *modkit.BackendRef:
			decodeBackendRef(u, d, p, n)
			return
		case *modkit.Secret:
			if s, ok := d.string(p, n, "string"); ok {
				*u = modkit.NewSecret(s)
				d.secrets = append(d.secrets, s)
			}
			return
		case *modkit.Duration:
			d.duration(p, n, (*time.Duration)(u))
			return
		case json.Unmarshaler:
			raw, err := json.Marshal(d.plain(p, n))
			if err == nil {
				err = u.UnmarshalJSON(raw)
			}
			if err != nil {
				d.fail(p, fmt.Errorf("%w: %w", ErrInvalidValue, err))
			}
			return
		case encoding.TextUnmarshaler:
			s, ok := n.(string)
			if !ok {
				d.fail(p, wrongType("string", n))
				return
			}
			if s, ok = d.str(p, s); !ok {
				return
			}
			if err := u.UnmarshalText([]byte(s)); err != nil {
				d.fail(p, fmt.Errorf("%w: %w", ErrInvalidValue, err))
			}
			return
		}
	}
	if v.Type() == durationType {
		var dur time.Duration
		d.duration(p, n, &dur)
		v.SetInt(int64(dur))
		return
	}
	switch v.Kind() {
	case reflect.String:
		s, ok := n.(string)
		if !ok {
			d.fail(p, wrongType("string", n))
			return
		}
		if s, ok = d.str(p, s); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		b, ok := n.(bool)
		if !ok {
			d.fail(p, wrongType("true or false", n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		num, ok := n.(json.Number)
		if !ok {
			d.fail(p, wrongType("an integer", n))
			return
		}
		i, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || v.OverflowInt(i) {
			d.fail(p, fmt.Errorf("%w: want an integer that fits %s", ErrWrongType, v.Type()))
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		num, ok := n.(json.Number)
		if !ok {
			d.fail(p, wrongType("a non-negative integer", n))
			return
		}
		u, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil || v.OverflowUint(u) {
			d.fail(p, fmt.Errorf("%w: want a non-negative integer that fits %s", ErrWrongType, v.Type()))
			return
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		num, ok := n.(json.Number)
		if !ok {
			d.fail(p, wrongType("a number", n))
			return
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil || v.OverflowFloat(f) {
			d.fail(p, fmt.Errorf("%w: want a number that fits %s", ErrWrongType, v.Type()))
			return
		}
		v.SetFloat(f)
	case reflect.Slice:
		list, ok := n.([]any)
		if !ok {
			d.fail(p, wrongType("an array", n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(list), len(list))
		for i, e := range list {
			d.decode(p.index(i), e, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			d.fail(p, fmt.Errorf("unsupported setting type %s", v.Type()))
			return
		}
		obj, ok := n.(*object)
		if !ok {
			d.fail(p, wrongType("an object", n))
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(v.Type(), len(obj.keys)))
		}
		for _, k := range obj.keys {
			e := reflect.New(v.Type().Elem()).Elem()
			d.decode(p.at(k), obj.vals[k], e)
			v.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
	case reflect.Struct:
		obj, ok := n.(*object)
		if !ok {
			d.fail(p, wrongType("an object", n))
			return
		}
		d.decodeStruct(p, obj, v, nil)
	case reflect.Interface:
		if v.NumMethod() != 0 {
			d.fail(p, fmt.Errorf("unsupported setting type %s", v.Type()))
			return
		}
		v.Set(reflect.ValueOf(d.plain(p, n)))
	default:
		d.fail(p, fmt.Errorf("unsupported setting type %s", v.Type()))
	}
}

// decodeStruct decodes obj's keys into v's fields, then checks required
// fields. Keys in skip are the caller's (the module ID). A value under an
// unknown key is not looked at (its placeholders are never replaced).
func (d *decoder) decodeStruct(p *path, obj *object, v reflect.Value, skip map[string]bool) {
	fs := settings.Of(v.Type())
	failed := map[string]bool{}
	for _, k := range obj.keys {
		if skip[k] {
			continue
		}
		f, ok := fs.ByKey[k]
		if !ok {
			d.fail(p.at(k), unknownKey(k, fs))
			continue
		}
		before := len(d.errs)
		d.decode(p.at(k), obj.vals[k], v.FieldByIndex(f.Index))
		failed[k] = len(d.errs) > before
	}
	if d.stopped {
		return
	}
	for _, f := range fs.List {
		if f.Required && !failed[f.Key] && isEmpty(v.FieldByIndex(f.Index)) {
			d.fail(p.at(f.Key), ErrRequired)
		}
	}
}

func unknownKey(k string, fs *settings.Fields) error {
	best, bestDist := "", 3
	for _, f := range fs.List {
		if dist := editDistance(strings.ToLower(k), strings.ToLower(f.Key)); dist < bestDist {
			best, bestDist = f.Key, dist
		}
	}
	if best == "" {
		return ErrUnknownKey
	}
	return fmt.Errorf("%w (did you mean %q?)", ErrUnknownKey, best)
}

// editDistance is the Levenshtein distance between a and b, capped for long
// inputs (keys are short; a long one is simply not a near miss).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// isEmpty reports whether a required setting counts as missing.
func isEmpty(v reflect.Value) bool {
	if v.CanInterface() {
		if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
			return z.IsZero()
		}
	}
	switch v.Kind() {
	case reflect.String, reflect.Slice, reflect.Map:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// marshalSettings writes struct v as a JSON object of its settings
// (settings.Of: keys from json tags, embedded structs' fields promoted, "-"
// skipped, omitempty honoured), in declaration order, each value as
// encoding/json writes it except time.Duration, which comes out as a
// duration string ("1.5s") as Unmarshal takes it. The document's own types
// marshal through it, so that printing a document gives one that loads.
func marshalSettings(v reflect.Value) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	for _, f := range settings.Of(v.Type()).List {
		fv, err := v.FieldByIndexErr(f.Index)
		if err != nil { // through a nil embedded pointer: nothing to write
			continue
		}
		if f.OmitEmpty && isEmptyJSON(fv) {
			continue
		}
		val, err := marshalSetting(fv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Key, err)
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		key, _ := json.Marshal(f.Key)
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// marshalSetting writes one setting's value (see marshalSettings).
func marshalSetting(v reflect.Value) ([]byte, error) {
	if v.Type() == durationType {
		return json.Marshal(time.Duration(v.Int()).String())
	}
	if v.CanInterface() {
		if _, ok := v.Interface().(json.Marshaler); ok {
			return json.Marshal(v.Interface())
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []byte("null"), nil
		}
		return marshalSetting(v.Elem())
	case reflect.Struct:
		if _, ok := reflect.New(v.Type()).Interface().(json.Marshaler); !ok {
			return marshalSettings(v)
		}
	}
	return json.Marshal(v.Interface())
}

// isEmptyJSON is encoding/json's omitempty test.
func isEmptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// The document's types whose fields errors name (configPath).
var (
	electionDocType = reflect.TypeFor[Election]()
	poolDocType     = reflect.TypeFor[Pool]()
	lockerDocType   = reflect.TypeFor[Locker]()
)

func strconvQuote(s string) string { return strconv.Quote(s) }

// Unmarshal decodes the JSON document data into v (a non-nil pointer)
// strictly: unknown and duplicate keys, wrong types, out-of-range numbers,
// malformed durations and missing `config:"required"` settings are errors,
// and keys match field names exactly (case matters). Fields are named by
// their json tags (or Go names); fields of embedded structs (not pointers)
// are promoted, and `json:"-"` fields are skipped. time.Duration and
// Duration fields take strings such as "1.5s", never numbers. It reports
// every error (up to 50), each a *PathError naming the JSON path, joined
// with errors.Join; no error quotes a value. Placeholders are not replaced
// (Load does that); module objects are decoded by BackendRef fields.
func Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("config: Unmarshal needs a non-nil pointer, got %T", v)
	}
	tree, err := parseTree(data, newBudget())
	if err != nil {
		return err
	}
	d := &decoder{}
	d.decode(nil, tree, rv.Elem())
	return d.err()
}
