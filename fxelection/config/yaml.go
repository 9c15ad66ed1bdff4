package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"go.uber.org/fx"
	"go.yaml.in/yaml/v3"
)

// ParseYAML is Parse for a YAML document: the same structure, keys and
// rules as JSON (it is converted value by value, then decoded exactly as a
// JSON document would be, so errors name the same paths). Plain scalars get
// YAML 1.2's core types: 15s and "15s" are strings, 15 a number, true a
// boolean; quote a value to keep it a string. One document per input; no
// merge keys ("<<"); aliases are expanded, each use charged to the
// document's budget (MaxValues, MaxDocumentBytes), so a few lines of nested
// aliases cannot expand to gigabytes.
func (l Loader) ParseYAML(raw []byte) (*Document, error) {
	doc, err := l.decodeYAML(raw)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(); err != nil {
		return nil, redact(err, values(doc.secrets))
	}
	return doc, nil
}

// LoadYAML is Load for a YAML document (see ParseYAML).
func (l Loader) LoadYAML(raw []byte) (fx.Option, error) {
	doc, err := l.decodeYAML(raw)
	if err != nil {
		return nil, err
	}
	return Build(doc)
}

func (l Loader) decodeYAML(raw []byte) (*Document, error) {
	b := newBudget()
	tree, err := parseYAML(raw, b)
	if err != nil {
		return nil, err
	}
	return l.fromTree(tree, b)
}

func parseYAML(raw []byte, b *budget) (any, error) {
	if len(raw) > MaxDocumentBytes {
		return nil, pathErr("", fmt.Errorf("%w: larger than %d bytes", ErrTooLarge, MaxDocumentBytes))
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if err == io.EOF {
			return &object{vals: map[string]any{}}, nil // empty input: an empty document
		}
		return nil, pathErr("", fmt.Errorf("%w: %w", ErrSyntax, err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, pathErr("", fmt.Errorf("%w: more than one YAML document", ErrSyntax))
	}
	c := &yamlConverter{budget: b}
	return c.convert(nil, &root, 0)
}

type yamlConverter struct {
	budget *budget
}

func (c *yamlConverter) convert(p *path, n *yaml.Node, depth int) (any, error) {
	cost := 1
	if n.Kind == yaml.ScalarNode {
		cost += len(n.Value)
	}
	if n.Kind != yaml.DocumentNode && n.Kind != yaml.AliasNode {
		if err := c.budget.charge(1, cost); err != nil {
			return nil, pathErr(p.String(), err)
		}
	}
	if depth > MaxDepth {
		return nil, pathErr(p.String(), fmt.Errorf("%w: nested deeper than %d levels", ErrSyntax, MaxDepth))
	}
	at := func(format string, args ...any) error {
		return pathErr(p.String(), fmt.Errorf("%w at line %d: %s", ErrSyntax, n.Line, fmt.Sprintf(format, args...)))
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return &object{vals: map[string]any{}}, nil
		}
		return c.convert(p, n.Content[0], depth)
	case yaml.AliasNode:
		return c.convert(p, n.Alias, depth+1)
	case yaml.SequenceNode:
		list := []any{}
		for i, e := range n.Content {
			v, err := c.convert(p.index(i), e, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	case yaml.MappingNode:
		obj := &object{vals: map[string]any{}}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, at("keys must be plain strings")
			}
			if k.ShortTag() == "!!merge" {
				return nil, at("merge keys (<<) are not supported")
			}
			kp := p.at(k.Value)
			if err := c.budget.charge(0, 1+len(k.Value)); err != nil {
				return nil, pathErr(kp.String(), err)
			}
			if _, dup := obj.vals[k.Value]; dup {
				return nil, pathErr(kp.String(), ErrDuplicateKey)
			}
			val, err := c.convert(kp, v, depth+1)
			if err != nil {
				return nil, err
			}
			obj.keys = append(obj.keys, k.Value)
			obj.vals[k.Value] = val
		}
		return obj, nil
	case yaml.ScalarNode:
		return scalar(n, at)
	}
	return nil, at("unsupported YAML node")
}

// scalar converts a YAML scalar to a tree value by its resolved tag. Its
// errors never quote the value.
func scalar(n *yaml.Node, at func(string, ...any) error) (any, error) {
	switch n.ShortTag() {
	case "!!str", "!!timestamp":
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, at("malformed boolean")
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return json.Number(strconv.FormatInt(i, 10)), nil
		}
		var u uint64
		if err := n.Decode(&u); err == nil {
			return json.Number(strconv.FormatUint(u, 10)), nil
		}
		return nil, at("integer out of range")
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, at("want a finite number")
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return nil, at("unsupported YAML type %s", n.ShortTag())
}
