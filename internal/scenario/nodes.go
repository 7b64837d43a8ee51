package scenario

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// nodeAt returns the node at a path of mapping keys (string) and list
// indices (int), or nil.
func nodeAt(n *yaml.Node, path []any) *yaml.Node {
	for _, p := range path {
		if n == nil {
			return nil
		}
		switch k := p.(type) {
		case string:
			var next *yaml.Node
			for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					next = n.Content[i+1]
				}
			}
			n = next
		case int:
			if n.Kind != yaml.SequenceNode || k >= len(n.Content) {
				return nil
			}
			n = n.Content[k]
		}
	}
	return n
}

// setPath sets the value at a dotted path of mapping keys, creating
// mappings on the way.
func setPath(n *yaml.Node, keys []string, val *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s is not a group of fields", keys[0])
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != keys[0] {
			continue
		}
		if len(keys) == 1 {
			n.Content[i+1] = val
			return nil
		}
		if n.Content[i+1].Kind != yaml.MappingNode {
			// An empty or scalar field becomes a group.
			n.Content[i+1] = &yaml.Node{Kind: yaml.MappingNode, Line: val.Line}
		}
		return setPath(n.Content[i+1], keys[1:], val)
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Value: keys[0], Line: val.Line}
	if len(keys) == 1 {
		n.Content = append(n.Content, key, val)
		return nil
	}
	child := &yaml.Node{Kind: yaml.MappingNode, Line: val.Line}
	n.Content = append(n.Content, key, child)
	return setPath(child, keys[1:], val)
}

func removeKey(n *yaml.Node, key string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			return
		}
	}
}

func clone(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = clone(ch)
	}
	return &c
}

// setLines gives a node made from the command line a line number.
func setLines(n *yaml.Node, line int) {
	n.Line = line
	for _, c := range n.Content {
		setLines(c, line)
	}
}
