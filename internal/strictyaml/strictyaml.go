// Package strictyaml decodes YAML into Go structs and refuses what the
// structs do not describe. yaml.v3 on its own reports unknown keys only when
// decoding a whole document; tlab also decodes parts of documents (a profile
// inside a scenario, an override on top of a profile), so it checks the node
// tree against the target type itself and names the file, the line, the
// offending key and the keys that would have been accepted.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a problem at a place in a YAML file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		// Nodes made from the command line (--set) have no line.
		return fmt.Sprintf("%s, in a --set override: %s", e.File, e.Msg)
	}
	if e.File == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Parse reads a YAML document into a node tree.
func Parse(file string, data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(file, err)
	}
	if doc.Kind == 0 {
		return nil, &Error{File: file, Line: 1, Msg: "the file is empty"}
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0], nil
	}
	return &doc, nil
}

// parserProblems are the problems yaml.v3's parser (not its scanner)
// reports (parserc.go). For these its "line N" counts from zero (it adds
// one for scanner errors only: decode.go, parser.fail), so N is one line
// early; the line is where the unfinished collection began, or where the
// parser stopped when that is the first line.
var parserProblems = map[string]string{
	"did not find expected ',' or ']'":       "a [ on or before this line is not closed",
	"did not find expected ',' or '}'":       "a { on or before this line is not closed",
	"did not find expected key":              "check the indentation of the lines after it",
	"did not find expected '-' indicator":    "check the indentation of the list's items",
	"did not find expected node content":     "",
	"did not find expected <document start>": "",
	"did not find expected <stream-start>":   "",
	"found undefined tag handle":             "",
	"found duplicate %TAG directive":         "",
	"found duplicate %YAML directive":        "",
	"found incompatible YAML document":       "",
}

// syntaxError turns yaml.v3's "yaml: line N: problem" into FILE:LINE:
// problem, with the line a reader's editor shows (counting from one).
func syntaxError(file string, err error) error {
	m := syntaxLine.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("%s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	line, _ := strconv.Atoi(m[1])
	msg := m[2]
	if hint, isParser := parserProblems[msg]; isParser {
		line++
		if hint != "" {
			msg += " (" + hint + ")"
		}
	}
	return &Error{File: file, Line: line, Msg: "YAML syntax: " + msg}
}

var syntaxLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Decode checks node against v's type and then decodes it into v. Fields
// already set in v and absent from node keep their values, so decoding a
// second node onto the same value applies it as an override.
func Decode(file string, node *yaml.Node, v any) error {
	if err := Check(file, node, reflect.TypeOf(v)); err != nil {
		return err
	}
	if err := node.Decode(v); err != nil {
		return prefixFile(file, err)
	}
	return nil
}

// Unmarshal parses data and decodes it strictly into v.
func Unmarshal(file string, data []byte, v any) error {
	node, err := Parse(file, data)
	if err != nil {
		return err
	}
	return Decode(file, node, v)
}

var (
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	nodeType        = reflect.TypeOf(yaml.Node{})
)

// Check walks node and reports the first key that t has no field for, or a
// node of the wrong shape (a list where a mapping is expected, and so on).
func Check(file string, node *yaml.Node, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if node.Kind == yaml.AliasNode {
		node = node.Alias
	}
	// A yaml.Node field takes anything (its owner checks it later), and a
	// type with its own UnmarshalYAML checks itself.
	if t == nodeType || reflect.PointerTo(t).Implements(unmarshalerType) || t.Implements(unmarshalerType) {
		return nil
	}
	if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if node.Kind != yaml.MappingNode {
			return &Error{file, node.Line, fmt.Sprintf("want a mapping of %s, got %s", strings.Join(fieldNames(t), ", "), describe(node))}
		}
		fields := fieldTypes(t)
		for i := 0; i+1 < len(node.Content); i += 2 {
			key, val := node.Content[i], node.Content[i+1]
			ft, ok := fields[key.Value]
			if !ok {
				return &Error{file, key.Line, fmt.Sprintf("unknown key %q; expected one of: %s", key.Value, strings.Join(fieldNames(t), ", "))}
			}
			if err := Check(file, val, ft); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		if node.Kind != yaml.SequenceNode {
			return &Error{file, node.Line, fmt.Sprintf("want a list, got %s%s", describe(node), listFix(node))}
		}
		for _, item := range node.Content {
			if err := Check(file, item, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		if node.Kind != yaml.MappingNode {
			return &Error{file, node.Line, fmt.Sprintf("want a mapping, got %s", describe(node))}
		}
		for i := 1; i < len(node.Content); i += 2 {
			if err := Check(file, node.Content[i], t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Interface:
		return nil
	default:
		if node.Kind != yaml.ScalarNode {
			return &Error{file, node.Line, fmt.Sprintf("want a single %s value, got %s", t.Kind(), describe(node))}
		}
	}
	return nil
}

// fieldTypes maps each YAML key of struct t to its field type, following
// inline fields the way yaml.v3 does.
func fieldTypes(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range fieldTypes(ft) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for k := range fieldTypes(t) {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// listFix writes a scalar given where a list belongs as the list it
// likely meant: "tcp,quic" is [tcp, quic] (--set protocols=tcp,quic).
func listFix(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode || strings.TrimSpace(n.Value) == "" {
		return ""
	}
	items := strings.Split(n.Value, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return "; write it as a list: [" + strings.Join(items, ", ") + "]"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// linePrefix matches the "line N: " that yaml.v3 and tlab's unit types
// put in front of their errors.
var linePrefix = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// prefixFile turns yaml.v3's and the units' "line N: ..." errors into the
// same "FILE:N: ..." form as every other error of this package.
func prefixFile(file string, err error) error {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	first := msgs[0]
	if m := linePrefix.FindStringSubmatch(first); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: first[len(m[0]):]}
	}
	if file == "" {
		return err
	}
	return fmt.Errorf("%s: %s", file, strings.Join(msgs, "; "))
}

// Encode renders v as YAML with two-space indentation.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// ErrorAt makes an error at the line of key's value in the mapping node
// (or at the node itself when key is absent or empty), so that a value
// that is well-formed but impossible is reported where it stands.
func ErrorAt(file string, node *yaml.Node, key, format string, args ...any) error {
	line := 0
	if node != nil {
		line = node.Line
		for i := 0; key != "" && node.Kind == yaml.MappingNode && i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == key {
				line = node.Content[i+1].Line
			}
		}
	}
	return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}
