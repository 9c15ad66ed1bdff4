package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// Document is a configuration document: the elections, pools and lockers
// one process runs and the backends they use. In JSON:
//
//	{
//	  "backends": {
//	    "shared": {"module": "fxelection.backends.memory"}
//	  },
//	  "elections": [
//	    {"name": "billing", "backend": "shared", "exit_on_loss": true,
//	     "health": {"command": ["pg_isready", "-h", "127.0.0.1"], "interval": "5s"}},
//	    {"name": "reports", "identity": "{env.HOSTNAME}", "lease_duration": "30s",
//	     "renew_deadline": "20s", "retry_period": "4s",
//	     "metadata": {"addr": "10.0.0.7:8080"},
//	     "backend": {"module": "fxelection.backends.memory"}}
//	  ],
//	  "pools": [
//	    {"name": "orders", "shard_count": 64, "identity": "{env.HOSTNAME}",
//	     "max_workers": 16, "retry_period": "1s", "backend": "shared"},
//	    {"name": "tenants", "shards": ["acme", "globex", "initech"],
//	     "backend": {"module": "fxelection.backends.memory"}}
//	  ],
//	  "lockers": [
//	    {"name": "reports", "identity": "{env.HOSTNAME}", "lease_duration": "30s",
//	     "renew_deadline": "20s", "retry_period": "4s", "backend": "shared"}
//	  ]
//	}
//
// A document has at least one election, pool or locker. A pool (see Pool)
// names its shards with "shards" or numbers them with "shard_count" (one
// of the two), and takes a backend as an election does. Built (Build), each
// pool is a *pool.Pool tagged `name:"<pool name>"` in the fx graph; in a
// Runtime, Runtime.Pool returns it by name. Pool names are unique among
// pools; an election may have a pool's name (elections and pools are
// looked up apart). No election, pool or shard name contains '#', which
// names the library's own records (a pool's are "<name>#shard/<shard>"
// and "<name>#member/<k>"), so none meets another's. A locker (see Locker)
// is a *lock.Locker tagged `name:"<locker name>"` in the fx graph (in a
// Runtime, Runtime.Locker returns it by name), closed on the app's stop
// before its backend, which releases the locks it still holds; the code
// that injects it picks each lock's key. Locker names are unique among
// lockers and may equal an election's or a pool's. A document cannot hold
// callbacks: the application reads a pool's Owned shards, or observes
// each shard's elector (pool.Pool.Elector) before the pool starts.
type Document struct {
	// Backends are backend modules shared by name: every election whose
	// backend is that name uses one provisioned instance (one client, one
	// pool). Each must be a module object; each must be used.
	Backends map[string]BackendRef `json:"backends,omitempty"`

	// Elections are the elections this process campaigns in. A document
	// has at least one election, pool or locker.
	Elections []Election `json:"elections,omitempty"`

	// Pools are the pools this process is a worker of (package
	// fxelection/pool), each on a backend as an election is.
	Pools []Pool `json:"pools,omitempty"`

	// Lockers are the lock.Lockers this process takes locks with (package
	// fxelection/lock), each on a backend as an election is.
	Lockers []Locker `json:"lockers,omitempty"`

	// Extensions are modules in ExtensionsNamespace (metrics, health, …),
	// each a module object; their fx options join the app's.
	Extensions []ExtensionRef `json:"extensions,omitempty"`

	secrets []Secret // values substituted for placeholders, and every Secret decoded (Secrets, so printing doc shows none)
}

// Election is one election in a Document: the JSON form of
// fxelection.Config (which see for every field's meaning, default and
// limits) plus the backend it runs on.
type Election struct {
	// Name is the election's name (Config.Name). Required.
	Name string `json:"name" config:"required"`
	// FxName is the elector's fx name tag (`name:"<fx_name>"`); it must be
	// unique in the document and consist of ASCII letters, digits and
	// "_.-:/". Default: Name, which must then fit those rules.
	FxName string `json:"fx_name,omitempty"`
	// Identity is Config.Identity. Default: host, pid and a random suffix.
	Identity string `json:"identity,omitempty"`
	// Metadata is Config.Metadata.
	Metadata map[string]string `json:"metadata,omitempty"`
	// LeaseDuration is Config.LeaseDuration. Default: 15s.
	LeaseDuration Duration `json:"lease_duration,omitempty"`
	// RenewDeadline is Config.RenewDeadline. Default: 10s.
	RenewDeadline Duration `json:"renew_deadline,omitempty"`
	// RetryPeriod is Config.RetryPeriod. Default: 2s.
	RetryPeriod Duration `json:"retry_period,omitempty"`
	// MaxBackoff is Config.MaxBackoff. Default: 30s.
	MaxBackoff Duration `json:"max_backoff,omitempty"`
	// StopTimeout is Config.StopTimeout. Default: 10s.
	StopTimeout Duration `json:"stop_timeout,omitempty"`
	// KeepLeaseOnStop is Config.KeepLeaseOnStop.
	KeepLeaseOnStop bool `json:"keep_lease_on_stop,omitempty"`
	// NoRecampaign is Config.NoRecampaign.
	NoRecampaign bool `json:"no_recampaign,omitempty"`
	// Health, when set, gates campaigning on a check of this candidate's
	// own health (Config.HealthCheck, HealthInterval, HealthThreshold):
	// a command or an HTTP GET.
	Health *Health `json:"health,omitempty"`
	// ExitOnLoss is Config.ExitOnLoss: the app shuts down with exit code 1
	// when this elector stops leading other than by the app's stop.
	ExitOnLoss bool `json:"exit_on_loss,omitempty"`
	// Priority is Config.Priority. Default: 0.
	Priority int `json:"priority,omitempty"`
	// PriorityGrace is Config.PriorityGrace. Default: 2 × RetryPeriod.
	PriorityGrace Duration `json:"priority_grace,omitempty"`
	// Preempt is Config.Preempt.
	Preempt bool `json:"preempt,omitempty"`
	// MinTenure is Config.MinTenure. Default: LeaseDuration.
	MinTenure Duration `json:"min_tenure,omitempty"`
	// Backend is the backend module, inline or by name. Required.
	Backend BackendRef `json:"backend" config:"required"`
}

// Config returns e as an fxelection.Config (Callbacks and Logger unset).
// With Health set, HealthCheck is CommandCheck's or HTTPCheck's check; if
// Health is invalid (Validate reports it), a check that always fails.
func (e Election) Config() fxelection.Config {
	c := fxelection.Config{
		Name:     e.Name,
		Identity: e.Identity,
		Metadata: e.Metadata,
		Timing: fxelection.Timing{
			LeaseDuration: time.Duration(e.LeaseDuration),
			RenewDeadline: time.Duration(e.RenewDeadline),
			RetryPeriod:   time.Duration(e.RetryPeriod),
			MaxBackoff:    time.Duration(e.MaxBackoff),
		},
		StopTimeout:     time.Duration(e.StopTimeout),
		KeepLeaseOnStop: e.KeepLeaseOnStop,
		NoRecampaign:    e.NoRecampaign,
		ExitOnLoss:      e.ExitOnLoss,
		Candidacy: fxelection.Candidacy{
			Priority:      e.Priority,
			PriorityGrace: time.Duration(e.PriorityGrace),
			Preempt:       e.Preempt,
			MinTenure:     time.Duration(e.MinTenure),
		},
	}
	if h := e.Health; h != nil {
		check, _, err := h.check()
		if err != nil {
			check = func(context.Context) error { return err }
		}
		c.Health.Check, c.Health.Interval, c.Health.Threshold = check, time.Duration(h.Interval), h.Threshold
	}
	return c
}

// fxName returns the elector's fx name.
func (e Election) fxName() string {
	if e.FxName != "" {
		return e.FxName
	}
	return e.Name
}

// BackendRef is where a document names a backend: either a module object
// {"module": "fxelection.backends.redis", …settings} (Module) or, in an
// election, a string naming an entry of Document.Backends (Use). Exactly one
// is set.
type BackendRef struct {
	// Use names an entry of Document.Backends.
	Use string
	// Module is an inline backend module with its decoded settings.
	Module BackendModule
}

// IsZero reports whether neither Use nor Module is set.
func (r BackendRef) IsZero() bool { return r.Use == "" && r.Module == nil }

// MarshalJSON writes Use as a string, or Module's settings with its ID
// under "module". Secrets come out as "xxxxx".
func (r BackendRef) MarshalJSON() ([]byte, error) {
	if r.Module == nil {
		return json.Marshal(r.Use)
	}
	return marshalModule(r.Module)
}

// marshalModule writes m's settings with its ID under "module".
func marshalModule(mod Module) ([]byte, error) {
	raw, err := json.Marshal(mod)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("config: module %q does not marshal to a JSON object", mod.ElectionModule().ID)
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m[moduleKey], _ = json.Marshal(mod.ElectionModule().ID)
	return json.Marshal(m)
}

// ExtensionRef is an extension module object in a document:
// {"module": "fxelection.extensions.<name>", …settings}.
type ExtensionRef struct {
	Module ExtensionModule
}

// IsZero reports whether Module is unset.
func (r ExtensionRef) IsZero() bool { return r.Module == nil }

// MarshalJSON writes Module's settings with its ID under "module".
func (r ExtensionRef) MarshalJSON() ([]byte, error) {
	if r.Module == nil {
		return []byte("null"), nil
	}
	return marshalModule(r.Module)
}

func (r *ExtensionRef) decodeTree(d *decoder, p *path, n any) {
	obj, ok := n.(*object)
	if !ok {
		d.fail(p, wrongType("a module object", n))
		return
	}
	if m := decodeModule(d, p, obj, ExtensionsNamespace); m != nil {
		r.Module = m.(ExtensionModule) // RegisterModule checked the namespace's interface
	}
}

func (r *BackendRef) decodeTree(d *decoder, p *path, n any) {
	switch n := n.(type) {
	case string:
		if s, ok := d.str(p, n); ok {
			r.Use = s
		}
	case *object:
		m := decodeModule(d, p, n, BackendsNamespace)
		if m != nil {
			r.Module = m.(BackendModule) // RegisterModule checked the namespace's interface
		}
	default:
		d.fail(p, wrongType("a module object or the name of an entry in backends", n))
	}
}

// decodeModule decodes a module object of namespace ns: its "module" key
// names the module, the other keys are its settings, decoded strictly.
// Its errors do not quote the ID unless it is registered: it may come from
// a placeholder.
func decodeModule(d *decoder, p *path, obj *object, ns string) Module {
	idPath := p.at(moduleKey)
	raw, ok := obj.vals[moduleKey]
	if !ok || raw == nil {
		d.fail(idPath, ErrRequired)
		return nil
	}
	s, ok := raw.(string)
	if !ok {
		d.fail(idPath, wrongType("a module ID string", raw))
		return nil
	}
	if s, ok = d.str(idPath, s); !ok {
		return nil
	}
	id := ModuleID(s)
	if err := id.Validate(); err != nil {
		d.fail(idPath, fmt.Errorf("%w: want lower-case labels joined by dots (namespace.name)", ErrInvalidModuleID))
		return nil
	}
	if id.Namespace() != ns {
		d.fail(idPath, fmt.Errorf("%w: the module is not in namespace %s", ErrUnknownModule, ns))
		return nil
	}
	info, err := GetModule(id)
	if err != nil {
		d.fail(idPath, fmt.Errorf("%w: no such module in namespace %s%s (registered: %s); import the package that provides it",
			ErrUnknownModule, ns, didYouMean(s, registeredIDs(ns)), strings.Join(registeredIDs(ns), ", ")))
		return nil
	}
	m := info.New()
	d.decodeStruct(p, obj, reflect.ValueOf(m).Elem(), map[string]bool{moduleKey: true})
	return m
}

// registeredIDs lists the IDs of the modules registered in ns.
func registeredIDs(ns string) []string {
	var ids []string
	for _, m := range Modules() {
		if m.ID.Namespace() == ns {
			ids = append(ids, string(m.ID))
		}
	}
	return ids
}

// didYouMean names the candidate nearest to s (" (did you mean "x"?)"), or
// is empty if none is near. It names a candidate, never s.
func didYouMean(s string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if dist := editDistance(strings.ToLower(s), strings.ToLower(c)); dist < bestDist {
			best, bestDist = c, dist
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + quoteKey(best) + "?)"
}

// Loader parses documents. Its zero value reads the process environment
// and the file system.
type Loader struct {
	// LookupEnv resolves {env.NAME}. Default: os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// ReadFile resolves {file.PATH}. Default: reads the file, refusing one
	// larger than MaxPlaceholderFile.
	ReadFile func(path string) ([]byte, error)
	// RefusePlaceholders makes every {env.NAME} and {file.PATH} placeholder
	// an error (ErrPlaceholderRefused) at its JSON path, naming its kind and
	// neither the variable nor the file: nothing is looked up or read. For
	// documents from a less trusted source than the process itself (an
	// admin endpoint's body). Default: placeholders are resolved.
	RefusePlaceholders bool
}

// Parse decodes and validates a document with the zero Loader.
func Parse(raw []byte) (*Document, error) { return Loader{}.Parse(raw) }

// Load parses raw with the zero Loader and builds its fx options.
func Load(raw []byte) (fx.Option, error) { return Loader{}.Load(raw) }

// Load parses raw (see Parse) and returns Build's options. It does no I/O
// beyond reading placeholder files: nothing is provisioned until the app
// starts.
func (l Loader) Load(raw []byte) (fx.Option, error) {
	doc, err := l.decode(raw)
	if err != nil {
		return nil, err
	}
	return Build(doc) // validates
}

// Parse turns raw JSON into a validated Document, in order: parse (syntax,
// duplicate keys, nesting depth), replace {env.NAME} and {file.PATH}
// placeholders in string values, decode strictly into the typed structs
// (each module's settings into its own config struct), then Validate. It
// reports every error it finds, each a *PathError naming the JSON path,
// joined with errors.Join; no error contains a setting's value, and values
// substituted for placeholders are redacted from module errors.
func (l Loader) Parse(raw []byte) (*Document, error) {
	doc, err := l.decode(raw)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(); err != nil {
		return nil, redact(err, values(doc.secrets))
	}
	return doc, nil
}

// decode is Parse without Validate.
func (l Loader) decode(raw []byte) (*Document, error) {
	b := newBudget()
	tree, err := parseTree(raw, b)
	if err != nil {
		return nil, err
	}
	return l.fromTree(tree, b)
}

// fromTree decodes a parsed tree, replacing the placeholders of the strings
// it stores (only under keys the document's types accept), charging what
// they add to b.
func (l Loader) fromTree(tree any, b *budget) (*Document, error) {
	r := &replacer{lookupEnv: l.LookupEnv, readFile: l.ReadFile, refuse: l.RefusePlaceholders, budget: b}
	doc := &Document{}
	d := &decoder{r: r}
	d.decode(nil, tree, reflect.ValueOf(doc).Elem())
	secrets := redactable(append(r.secrets, d.secrets...))
	if err := d.err(); err != nil {
		return nil, redact(err, secrets)
	}
	for _, s := range secrets {
		doc.secrets = append(doc.secrets, NewSecret(s))
	}
	return doc, nil
}

func values(secrets []Secret) []string {
	out := make([]string, len(secrets))
	for i, s := range secrets {
		out[i] = s.Value()
	}
	return out
}

// redactable keeps the secrets long enough to be redacted by replacement:
// shorter ones would make backendkit.RedactText withhold whole messages
// that merely contain, say, a digit.
func redactable(secrets []string) []string {
	var out []string
	for _, s := range secrets {
		if len(s) >= 4 {
			out = append(out, s)
		}
	}
	return out
}

// Validate checks the whole document and reports every problem as a
// *PathError: at least one election, pool or locker; each backends entry
// is a module object used by some election, pool or locker; each
// election's, pool's and locker's backend is a module object or the name
// of a backends entry; each extension is a module object; fx names are
// unique and fit a tag (pool names among pools, locker names among
// lockers); every module that implements Validator (nested
// backend modules included) passes Validate; every election's
// fxelection.Config passes Config.Validate, and its renew_deadline is
// shorter than what its backend module allows (pools' and lockers' too:
// backendkit.RenewDeadlineLimiter); each pool sets exactly one of
// shards and shard_count (at most MaxPoolShards), its shards are non-empty
// and distinct, and its pool.Config passes pool.New's checks; each
// locker's lock.Options pass Options.Validate; and no election or other
// pool is named under a pool's name and "/" (where the pool's own
// elections are). It does no I/O.
func (doc *Document) Validate() error {
	var errs []error
	fail := func(path string, err error) { errs = append(errs, pathErr(path, err)) }
	if len(doc.Elections) == 0 && len(doc.Pools) == 0 && len(doc.Lockers) == 0 {
		fail("elections", fmt.Errorf("%w: a document needs at least one election (elections), pool (pools) or locker (lockers)", ErrRequired))
	}
	used := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(doc.Backends)) {
		path := joinPath("backends", name)
		ref := doc.Backends[name]
		switch {
		case ref.Use != "":
			fail(path, fmt.Errorf("%w: want a module object, not the name of another backend", ErrWrongType))
		case ref.Module == nil:
			fail(joinPath(path, moduleKey), ErrRequired)
		default:
			validateModuleAt(path, ref.Module, fail)
		}
	}
	fxNames := map[string]int{}
	for i, e := range doc.Elections {
		path := "elections[" + strconv.Itoa(i) + "]"
		if e.Name == "" {
			fail(path+".name", ErrRequired)
		}
		switch name := e.fxName(); {
		case e.Name == "" && e.FxName == "":
		case !validFxName(name) && e.FxName != "":
			fail(path+".fx_name", fmt.Errorf("%w: want 1 to 200 ASCII letters, digits or _.-:/", ErrInvalidValue))
		case !validFxName(name):
			fail(path+".fx_name", fmt.Errorf("%w: the election name cannot be an fx name tag (ASCII letters, digits, _.-:/); set fx_name", ErrRequired))
		default:
			if j, dup := fxNames[name]; dup {
				fail(path+".fx_name", fmt.Errorf("%w: fx name already used by elections[%d]", ErrInvalidValue, j))
			} else {
				fxNames[name] = i
			}
		}
		doc.validateBackendRef(path+".backend", e.Backend, used, fail)
		if e.Health != nil {
			if _, at, err := e.Health.check(); err != nil {
				if at != "" {
					at = "." + at
				}
				fail(path+".health"+at, err)
			}
		}
		if e.Name != "" {
			if err := e.Config().Validate(); err != nil {
				fail(configPath(path, err), err)
			} else {
				doc.checkRenewLimit(path, e.Backend, e.RenewDeadline, fail)
			}
		}
	}
	doc.validatePools(used, fail)
	doc.validateLockers(used, fail)
	for i, x := range doc.Extensions {
		path := "extensions[" + strconv.Itoa(i) + "]"
		if x.Module == nil {
			fail(joinPath(path, moduleKey), ErrRequired)
		} else {
			validateModuleAt(path, x.Module, fail)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Backends)) {
		if !used[name] {
			fail(joinPath("backends", name), fmt.Errorf("%w: not used by any election, pool or locker", ErrInvalidValue))
		}
	}
	return errors.Join(errs...)
}

// validateBackendRef checks an election's, pool's or locker's backend at
// bpath: a module object, or the name of a backends entry (marked in
// used).
func (doc *Document) validateBackendRef(bpath string, ref BackendRef, used map[string]bool, fail func(string, error)) {
	switch {
	case ref.Use != "" && ref.Module != nil:
		fail(bpath, fmt.Errorf("%w: set a module or the name of a backends entry, not both", ErrInvalidValue))
	case ref.Use != "":
		if _, ok := doc.Backends[ref.Use]; !ok {
			fail(bpath, fmt.Errorf("%w: no backends entry by that name%s (defined: %s)", ErrInvalidValue,
				didYouMean(ref.Use, slices.Sorted(maps.Keys(doc.Backends))), backendNames(doc.Backends)))
		}
		used[ref.Use] = true
	case ref.Module == nil:
		fail(bpath, ErrRequired)
	default:
		validateModuleAt(bpath, ref.Module, fail)
	}
}

// checkRenewLimit reports at path's renew_deadline a renew deadline (rd,
// 0 for the default) that the backend module ref names does not allow
// (backendkit.RenewDeadlineProblem: ZooKeeper's session_timeout). A ref
// naming no backends entry is reported by validateBackendRef.
func (doc *Document) checkRenewLimit(path string, ref BackendRef, rd Duration, fail func(string, error)) {
	m := ref.Module
	if ref.Use != "" {
		m = doc.Backends[ref.Use].Module
	}
	if m == nil {
		return
	}
	d := time.Duration(rd)
	if d == 0 {
		d = fxelection.Timing{}.WithDefaults().RenewDeadline
	}
	if problem := backendkit.RenewDeadlineProblem(m, d); problem != "" {
		fail(path+".renew_deadline", fmt.Errorf("%w: %s", ErrInvalidValue, problem))
	}
}

// configKeys maps fxelection.Config's field names to an Election's keys.
var configKeys = map[string]string{
	"Name": "name", "Identity": "identity", "Metadata": "metadata",
	"LeaseDuration": "lease_duration", "RenewDeadline": "renew_deadline", "RetryPeriod": "retry_period",
	"MaxBackoff": "max_backoff", "StopTimeout": "stop_timeout",
	"Health.Interval": "health.interval", "Health.Threshold": "health.threshold",
	"Candidacy.PriorityGrace": "priority_grace", "Candidacy.MinTenure": "min_tenure",
}

// configPath points a Config.Validate error at the key of the field it
// names (a *fxelection.ConfigError for RenewDeadline →
// "elections[1].renew_deadline"), or at the election if it names none.
func configPath(path string, err error) string {
	var ce *fxelection.ConfigError
	if errors.As(err, &ce) {
		if key, ok := configKeys[ce.Field]; ok {
			return path + "." + key
		}
	}
	return path
}

func backendNames(m map[string]BackendRef) string {
	if len(m) == 0 {
		return "none"
	}
	var out string
	for i, n := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			out += ", "
		}
		out += quoteKey(n)
	}
	return out
}

// validateModuleAt validates m (at path) and then the backend modules
// nested in its settings: every BackendRef field (or *BackendRef), which
// must be an inline module object.
func validateModuleAt(path string, m Module, fail func(string, error)) {
	if err := validateModule(m); err != nil {
		fail(path, err)
	}
	v := reflect.ValueOf(m)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	for _, f := range fieldsOf(v.Type()).list {
		fv := v.FieldByIndex(f.index)
		if fv.Kind() == reflect.Pointer && fv.Type().Elem() == reflect.TypeFor[BackendRef]() {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		ref, ok := fv.Interface().(BackendRef)
		switch {
		case !ok || ref.IsZero():
		case ref.Use != "":
			fail(joinPath(path, f.key), fmt.Errorf("%w: a nested backend must be a module object, not the name of a backends entry", ErrWrongType))
		default:
			validateModuleAt(joinPath(path, f.key), ref.Module, fail)
		}
	}
}

// validateModule runs m's Validate, if it has one, naming the module.
func validateModule(m Module) (err error) {
	v, ok := m.(Validator)
	if !ok {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: validate panicked: %v", m.ElectionModule().ID, p)
		}
	}()
	if err := v.Validate(); err != nil {
		return fmt.Errorf("%s: %w", m.ElectionModule().ID, err)
	}
	return nil
}

func validFxName(s string) bool {
	if s == "" || len(s) > backendkit.MaxNameLen {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == ':' || c == '/') {
			return false
		}
	}
	return true
}

// Build validates doc and returns the fx options that run it. For each
// election it provides an *fxelection.Elector tagged `name:"<fx name>"` and
// in the group fxelection.GroupTag (where the metrics and health modules
// find every elector), built in one fxelection.Group per backend module
// (so that its elections renew in batches where the store can), with the
// graph's optional *slog.Logger, and always constructed. For each pool it
// provides a *pool.Pool tagged `name:"<pool name>"` (pools and electors
// are different types, so a pool and an election may share a name tag),
// made with pool.New on its backend module and the graph's optional
// *slog.Logger, always constructed, and started and stopped with the app
// (pool.Pool.Start does no I/O; Stop releases its shards and member slot
// within the stop context); its shard electors are not in
// fxelection.GroupTag's group. For each locker it provides a
// *lock.Locker tagged `name:"<locker name>"`, made with lock.NewInGroup in
// its backend module's group (its renewals share the electors' batches),
// reporting to the graph's optional lock.Observer, always constructed,
// and closed on the app's stop (lock.Locker.Hook: its held locks
// released, bounded by the stop context). Its backend is provisioned on
// the app's start: take locks from an OnStart hook appended by code that
// injects the Locker (it runs after the module's), or later, never in an
// fx.Invoke itself (the backend is not provisioned yet: TryAcquire fails
// with ErrNotProvisioned, Acquire waits for its context). For each backend module
// (each backends entry once, each inline module once) it appends a
// lifecycle hook before those of the electors, pools and lockers using it:
// on start, Provision then Backend; on stop, after the electors and pools
// have released their leases and the lockers their locks, Cleanup. A
// module whose Provision or Backend fails is cleaned up at once; fx stops
// (and so cleans up) the modules that started before it. Each extension's
// Options are added last.
//
// The options belong to one fx app: using them in a second app makes that
// app fail; Build (or Load) again instead.
func Build(doc *Document) (fx.Option, error) {
	// Secrets to redact from module errors: placeholder values, and every
	// Secret in the document (also when it was built in Go, not parsed).
	secrets := docSecrets(doc)
	if err := doc.Validate(); err != nil {
		return nil, redact(err, secrets)
	}
	shared := map[string]*provisioned{}
	for name, ref := range doc.Backends {
		shared[name] = newProvisioned(joinPath("backends", name), ref.Module, secrets)
	}
	provFor := func(path string, ref BackendRef) *provisioned {
		if p := shared[ref.Use]; p != nil {
			return p
		}
		return newProvisioned(path, ref.Module, secrets)
	}
	eprovs := make([]*provisioned, len(doc.Elections))
	for i, e := range doc.Elections {
		eprovs[i] = provFor("elections["+strconv.Itoa(i)+"].backend", e.Backend)
	}
	pprovs := make([]*provisioned, len(doc.Pools))
	for i, p := range doc.Pools {
		pprovs[i] = provFor("pools["+strconv.Itoa(i)+"].backend", p.Backend)
	}
	lprovs := make([]*provisioned, len(doc.Lockers))
	for i, l := range doc.Lockers {
		lprovs[i] = provFor("lockers["+strconv.Itoa(i)+"].backend", l.Backend)
	}
	var opts []fx.Option
	if len(doc.Elections) > 0 || len(doc.Pools) > 0 || len(doc.Lockers) > 0 {
		opts = append(opts, electorsOption(doc.Elections, eprovs, doc.Pools, pprovs, doc.Lockers, lprovs))
	}
	for i, x := range doc.Extensions {
		opt, err := extensionOptions(x.Module)
		if err != nil {
			return nil, redact(pathErr("extensions["+strconv.Itoa(i)+"]", err), secrets)
		}
		opts = append(opts, opt)
	}
	return fx.Module("fxelection.config", opts...), nil
}

// buildIn is what Build's constructor takes from the graph.
type buildIn struct {
	fx.In
	Lifecycle  fx.Lifecycle
	Shutdowner fx.Shutdowner
	Logger     *slog.Logger `optional:"true"`
	// LockObserver is every locker's lock.Options.Observer.
	LockObserver lock.Observer `optional:"true"`
}

var (
	electorType = reflect.TypeFor[*fxelection.Elector]()
	poolType    = reflect.TypeFor[*pool.Pool]()
	lockerType  = reflect.TypeFor[*lock.Locker]()
	errorType   = reflect.TypeFor[error]()
)

// electorsOption provides every election's elector, every pool and every
// locker from one constructor, whose result is an fx.Out struct made for
// the document: one field per election tagged with its fx name, one
// flattened into fxelection.GroupTag's group, one per pool and one per
// locker tagged with its name. One constructor rather than one annotated
// fx.Provide per election, because fx and dig keep per provider a caller
// stack, a graph node and new reflect types for its tags, which made a
// configured election cost several times the memory of a coded one. Each
// election's, pool's or locker's backend module is attached to the
// lifecycle before its elector, pool or locker is built, so the module's hook still comes before (starts before,
// stops after) every elector, pool and locker using it. An invoke of the
// first elector (or, with no elections, the first pool, or with neither,
// the first locker) makes fx build them all.
func electorsOption(elections []Election, eprovs []*provisioned, pools []Pool, pprovs []*provisioned, lockers []Locker, lprovs []*provisioned) fx.Option {
	n := len(elections)
	cfgs := make([]fxelection.Config, n)
	fields := make([]reflect.StructField, 0, n+2+len(pools)+len(lockers))
	fields = append(fields, reflect.StructField{Name: "Out", Type: reflect.TypeFor[fx.Out](), Anonymous: true})
	for i, e := range elections {
		cfgs[i] = e.Config()
		fields = append(fields, reflect.StructField{Name: "E" + strconv.Itoa(i), Type: electorType,
			Tag: reflect.StructTag(`name:"` + e.fxName() + `"`)})
	}
	fields = append(fields, reflect.StructField{Name: "All", Type: reflect.SliceOf(electorType),
		Tag: reflect.StructTag(strings.TrimSuffix(fxelection.GroupTag, `"`) + `,flatten"`)})
	for i, p := range pools {
		fields = append(fields, reflect.StructField{Name: "P" + strconv.Itoa(i), Type: poolType,
			Tag: reflect.StructTag(`name:"` + p.Name + `"`)})
	}
	for i, l := range lockers {
		fields = append(fields, reflect.StructField{Name: "L" + strconv.Itoa(i), Type: lockerType,
			Tag: reflect.StructTag(`name:"` + l.Name + `"`)})
	}
	outType := reflect.StructOf(fields)
	fnType := reflect.FuncOf([]reflect.Type{reflect.TypeFor[buildIn]()}, []reflect.Type{outType, errorType}, false)
	fail := func(err error) []reflect.Value {
		return []reflect.Value{reflect.Zero(outType), reflect.ValueOf(&err).Elem()}
	}
	ctor := reflect.MakeFunc(fnType, func(args []reflect.Value) []reflect.Value {
		in := args[0].Interface().(buildIn)
		out := reflect.New(outType).Elem()
		all := make([]*fxelection.Elector, 0, n)
		for i, p := range eprovs {
			if err := p.attach(in.Lifecycle, in.Logger); err != nil {
				return fail(err)
			}
			c := cfgs[i]
			if c.Logger == nil {
				c.Logger = in.Logger
			}
			e, err := p.group.New(c)
			if err != nil {
				return fail(fmt.Errorf("elections[%d]: %w", i, err))
			}
			e.Hook(in.Lifecycle, in.Shutdowner)
			out.Field(i + 1).Set(reflect.ValueOf(e))
			all = append(all, e)
		}
		out.Field(n + 1).Set(reflect.ValueOf(all))
		for i, p := range pprovs {
			if err := p.attach(in.Lifecycle, in.Logger); err != nil {
				return fail(err)
			}
			pl, err := newPool(pools[i], p, in.Logger)
			if err != nil {
				return fail(fmt.Errorf("pools[%d]: %w", i, err))
			}
			in.Lifecycle.Append(fx.Hook{OnStart: pl.Start, OnStop: pl.Stop})
			out.Field(n + 2 + i).Set(reflect.ValueOf(pl))
		}
		for i, p := range lprovs {
			if err := p.attach(in.Lifecycle, in.Logger); err != nil {
				return fail(err)
			}
			l, err := newLocker(lockers[i], p, in.LockObserver)
			if err != nil {
				return fail(fmt.Errorf("lockers[%d]: %w", i, err))
			}
			l.Hook(in.Lifecycle)
			out.Field(n + 2 + len(pools) + i).Set(reflect.ValueOf(l))
		}
		return []reflect.Value{out, reflect.Zero(errorType)}
	})
	var first fx.Option
	switch {
	case n > 0:
		first = fx.Invoke(fx.Annotate(func(*fxelection.Elector) {}, fx.ParamTags(`name:"`+elections[0].fxName()+`"`)))
	case len(pools) > 0:
		first = fx.Invoke(fx.Annotate(func(*pool.Pool) {}, fx.ParamTags(`name:"`+pools[0].Name+`"`)))
	default:
		first = fx.Invoke(fx.Annotate(func(*lock.Locker) {}, fx.ParamTags(`name:"`+lockers[0].Name+`"`)))
	}
	return fx.Options(fx.Provide(ctor.Interface()), first)
}

// newPool makes p's pool on prov's backend (no I/O), logging to log unless
// nil.
func newPool(p Pool, prov *provisioned, log *slog.Logger) (*pool.Pool, error) {
	c := p.Config()
	c.Logger = log
	return pool.New(c, prov.proxy)
}

func extensionOptions(m ExtensionModule) (opt fx.Option, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: options panicked: %v", m.ElectionModule().ID, p)
		}
	}()
	opt, err = m.Options()
	if err == nil && opt == nil {
		err = errors.New("nil fx.Option")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.ElectionModule().ID, err)
	}
	return opt, nil
}

// collectSecrets returns the values of every Secret reachable from v's
// exported fields, so errors from the module can be redacted with them.
func collectSecrets(v any) []string {
	var out []string
	seen := map[uintptr]bool{}
	var walk func(reflect.Value, int)
	walk = func(v reflect.Value, depth int) {
		if depth > MaxDepth || !v.IsValid() {
			return
		}
		if v.Type() == reflect.TypeFor[Secret]() {
			out = append(out, v.Interface().(Secret).Value())
			return
		}
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if v.IsNil() {
				return
			}
			if v.Kind() == reflect.Pointer {
				if seen[v.Pointer()] {
					return
				}
				seen[v.Pointer()] = true
			}
			walk(v.Elem(), depth+1)
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i), depth+1)
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i), depth+1)
			}
		case reflect.Map:
			// In key order, so the list is the same for equal maps
			// (moduleSum digests it).
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int {
				return strings.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
			})
			for _, k := range keys {
				walk(v.MapIndex(k), depth+1)
			}
		}
	}
	walk(reflect.ValueOf(v), 0)
	return out
}

// MaxDocumentBytes bounds a document read by LoadFile and ParseFile.
const MaxDocumentBytes = 4 << 20

// ParseFile reads the document at path (at most MaxDocumentBytes) and
// parses it as YAML if its name ends in .yaml or .yml, else as JSON.
// Errors name the file.
func (l Loader) ParseFile(path string) (*Document, error) {
	_, doc, err := l.ReadAndParseFile(path)
	return doc, err
}

// ReadAndParseFile is ParseFile that also returns the file's bytes as
// read, for a program that sends the document on (as "reload" does: the
// bytes it checked are the bytes it sends). raw is nil when the file could
// not be read.
func (l Loader) ReadAndParseFile(path string) (raw []byte, doc *Document, err error) {
	raw, err = readDocument(path)
	if err != nil {
		return nil, nil, err
	}
	if isYAML(path) {
		doc, err = l.ParseYAML(raw)
	} else {
		doc, err = l.Parse(raw)
	}
	if err != nil {
		return raw, nil, fmt.Errorf("%s: %w", path, err)
	}
	return raw, doc, nil
}

// IsYAMLFile reports whether ParseFile parses path as YAML: its name ends
// in .yaml or .yml (any case).
func IsYAMLFile(path string) bool { return isYAML(path) }

// LoadFile is Load (or LoadYAML, by the file name's extension, as in
// ParseFile) for the document at path. Errors name the file.
func (l Loader) LoadFile(path string) (fx.Option, error) {
	raw, err := readDocument(path)
	if err != nil {
		return nil, err
	}
	var opt fx.Option
	if isYAML(path) {
		opt, err = l.LoadYAML(raw)
	} else {
		opt, err = l.Load(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return opt, nil
}

func isYAML(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".yaml" || ext == ".yml"
}

func readDocument(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if len(raw) > MaxDocumentBytes {
		return nil, fmt.Errorf("config: %s: larger than %d bytes", path, MaxDocumentBytes)
	}
	return raw, nil
}
