package lab

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// posIndex maps field paths of a YAML document to where they are written.
//
// Viper gives the values but no positions, and it folds mapping keys to
// lower case and drops keys whose value is null or an empty mapping. The
// index, built from a yaml.Node parse of the same bytes, restores all three:
// the line of every key and list item, the key as written, and the list of
// keys of each mapping in file order.
//
// Paths are the field paths of messages ("topology.links[2].endpoints[1]"),
// looked up case-insensitively.
type posIndex struct {
	entries map[string]*posEntry
	// nodes counts visited YAML nodes, bounding the walk of documents that
	// abuse aliases.
	nodes int
}

type posEntry struct {
	line int
	// keys of a mapping in file order, as written (merge keys resolved).
	keys []string
	// isNull: the value was written as null or left empty.
	isNull bool
}

// maxIndexNodes bounds the index walk: aliases can make a small document
// expand to a huge tree (the "billion laughs" shape).
const maxIndexNodes = 1 << 20

// maxDepth bounds nesting.
const maxDepth = 64

func newPosIndex(doc *yaml.Node) (*posIndex, bool) {
	ix := &posIndex{entries: make(map[string]*posEntry)}
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	ok := ix.walk("", root, root.Line, 0)
	return ix, ok
}

// walk records n at path; line is where the key naming it is written.
func (ix *posIndex) walk(path string, n *yaml.Node, line, depth int) bool {
	ix.nodes++
	if ix.nodes > maxIndexNodes || depth > maxDepth {
		return false
	}
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return false
		}
		n = n.Alias
		ix.nodes++
		if ix.nodes > maxIndexNodes {
			return false
		}
	}
	key := strings.ToLower(path)
	e := ix.entries[key]
	if e == nil {
		e = &posEntry{line: line}
		ix.entries[key] = e
	}
	switch n.Kind {
	case yaml.ScalarNode:
		e.isNull = n.Tag == "!!null"
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if !ix.walk(path+"["+strconv.Itoa(i)+"]", c, c.Line, depth+1) {
				return false
			}
		}
	case yaml.MappingNode:
		return ix.walkMapping(path, e, n, depth)
	}
	return true
}

func (ix *posIndex) walkMapping(path string, e *posEntry, n *yaml.Node, depth int) bool {
	seen := make(map[string]bool)
	for _, k := range e.keys {
		seen[strings.ToLower(k)] = true
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		name := k.Value
		if !seen[strings.ToLower(name)] {
			seen[strings.ToLower(name)] = true
			e.keys = append(e.keys, name)
		}
		if !ix.walk(join(path, name), v, k.Line, depth+1) {
			return false
		}
	}
	// Merge keys (<<: *anchor) add the anchor's keys that the mapping does
	// not set itself, as the YAML merge-key spec and viper do.
	for _, m := range merges {
		for m.Kind == yaml.AliasNode && m.Alias != nil {
			m = m.Alias
		}
		var maps []*yaml.Node
		switch m.Kind {
		case yaml.MappingNode:
			maps = []*yaml.Node{m}
		case yaml.SequenceNode:
			maps = m.Content
		}
		for _, mm := range maps {
			for mm.Kind == yaml.AliasNode && mm.Alias != nil {
				mm = mm.Alias
			}
			if mm.Kind != yaml.MappingNode {
				continue
			}
			for i := 0; i+1 < len(mm.Content); i += 2 {
				k, v := mm.Content[i], mm.Content[i+1]
				if seen[strings.ToLower(k.Value)] {
					continue
				}
				seen[strings.ToLower(k.Value)] = true
				e.keys = append(e.keys, k.Value)
				if !ix.walk(join(path, k.Value), v, k.Line, depth+1) {
					return false
				}
			}
		}
	}
	return true
}

// line returns the line of path, or of its nearest recorded ancestor.
func (ix *posIndex) line(path string) int {
	p := strings.ToLower(path)
	for {
		if e := ix.entries[p]; e != nil {
			return e.line
		}
		if p == "" {
			return 0
		}
		p = parent(p)
	}
}

// keys returns the keys of the mapping at path as written, in file order.
func (ix *posIndex) keys(path string) []string {
	if e := ix.entries[strings.ToLower(path)]; e != nil {
		return e.keys
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// parent strips the last ".key" or "[i]" of a path.
func parent(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}
