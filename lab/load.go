package lab

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/viper"
	yaml "go.yaml.in/yaml/v3"
)

// maxFileSize bounds what Load reads: a lab file is hand-written text.
const maxFileSize = 8 << 20

// maxErrors bounds how many problems one Load reports.
const maxErrors = 50

// Load reads, decodes and validates the lab file at path. On failure the
// error is an ErrorList; every entry names the file, the line and the field.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and validates a lab file held in memory; name is used in
// messages (normally the path). It never panics, whatever the bytes.
func Parse(name string, data []byte) (*Spec, error) {
	if len(data) > maxFileSize {
		return nil, ErrorList{{File: name, Msg: fmt.Sprintf("file is %d bytes; a lab file may have at most %d", len(data), maxFileSize)}}
	}
	if ext := strings.ToLower(filepath.Ext(name)); ext != "" && ext != ".yaml" && ext != ".yml" {
		return nil, ErrorList{{File: name, Msg: fmt.Sprintf("lab files are YAML (.yaml or .yml), not %q", ext)}}
	}
	d := &decoder{file: name}
	settings, ok := d.read(data)
	if !ok {
		return nil, d.errs.sortDedup()
	}
	spec := d.decode(settings)
	if len(d.errs) == 0 {
		d.validate(spec)
	}
	if len(d.errs) > 0 {
		list := d.errs.sortDedup()
		if d.dropped > 0 {
			list = append(list, &FieldError{File: d.file, Msg: fmt.Sprintf("%d more errors not shown", d.dropped)})
		}
		return nil, list
	}
	d.flushPortWarnings()
	spec.Warnings = d.warns.sortDedup()
	spec.source = data
	return spec, nil
}

// read parses the bytes twice: as a yaml.Node tree (positions, keys as
// written) and with viper (the values).
func (d *decoder) read(data []byte) (map[string]any, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		e := yamlError(d.file, err)
		if e.Line == 0 {
			// The reader's errors (a byte that is not UTF-8, a control
			// character) and an unknown alias carry no line: find it.
			e.Line = firstFailingLine(data, err, 1)
		} else if l := problemLine(data, err, e.Line); l > e.Line {
			e.Msg = strings.Replace(e.Msg, "(in the mapping or list that starts on this line)",
				fmt.Sprintf("(in the mapping or list that starts on line %d)", e.Line), 1)
			e.Line = l
		}
		d.errs = append(d.errs, e)
		return nil, false
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		d.errorf("", "the file is empty")
		return nil, false
	}
	// Unmarshal reads the first document only: a second one (after
	// "---", two lab files pasted into one) would be ignored unread.
	if line := secondDocument(data); line > 0 {
		d.errs = append(d.errs, &FieldError{File: d.file, Line: line,
			Msg: "a second YAML document starts here: a lab file holds one lab (split the file, or remove the \"---\")"})
		return nil, false
	}
	if root := doc.Content[0]; root.Kind != yaml.MappingNode {
		d.errs = append(d.errs, &FieldError{File: d.file, Line: root.Line, Msg: "a lab file is a YAML mapping (name:, topology:, ...)"})
		return nil, false
	}
	// Mapping keys must stay distinct once viper folds them to lower case.
	// A repeated key is reported and dropped (the first one stays), and the
	// rest of the file is still read, so that its other problems come in
	// the same run. The walk does not follow aliases.
	dropped := !d.checkFoldedKeys(&doc)
	// Indexed without the dropped keys, whose fields would otherwise be
	// looked for in values that no longer hold them; the nodes keep their
	// lines.
	ix, ok := newPosIndex(&doc)
	if !ok {
		d.errorf("", "document too large or too deeply nested (aliases expand to more than %d nodes)", maxIndexNodes)
		return nil, false
	}
	d.pos = ix
	if dropped {
		clean, err := yaml.Marshal(&doc)
		if err != nil {
			return nil, false
		}
		data = clean
	}

	// A key delimiter no lab file uses: node names and SONiC table names
	// such as "scheduler.0" contain dots, which viper would split.
	v := viper.NewWithOptions(viper.KeyDelimiter("\x00"))
	v.SetConfigType("yaml")
	var settings map[string]any
	err := func() (err error) {
		// viper and the YAML decoder are third-party code: a panic on a
		// hostile document becomes an error naming the file.
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("cannot decode: %v", r)
			}
		}()
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			return err
		}
		settings = v.AllSettings()
		return nil
	}()
	if err != nil {
		d.errs = append(d.errs, yamlError(d.file, err))
		return nil, false
	}
	return settings, true
}

// secondDocument is the line where a second YAML document with content
// starts, or 0. An empty one (a trailing "---") is harmless. One that
// does not parse is a second document too: taking the decoder's error
// for "none" let a lab pasted after the first, with a typo, be ignored.
func secondDocument(data []byte) int {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first, second yaml.Node
	if dec.Decode(&first) != nil || len(first.Content) == 0 {
		return 0
	}
	if err := dec.Decode(&second); err != nil {
		if errors.Is(err, io.EOF) {
			return 0
		}
		return markerAfter(data, first.Content[0].Line)
	}
	if len(second.Content) == 0 {
		return 0
	}
	if c := second.Content[0]; c.Kind == yaml.ScalarNode && c.Tag == "!!null" && c.Value == "" {
		return 0 // "---" and nothing after it
	}
	line := second.Content[0].Line
	// The document starts at its "---" marker, the line before its
	// content when the marker stands alone.
	lines := bytes.Split(data, []byte("\n"))
	for l := line; l >= 1 && l <= len(lines); l-- {
		if bytes.HasPrefix(bytes.TrimRight(lines[l-1], "\r"), []byte("---")) {
			return l
		}
	}
	return line
}

// markerAfter is the first line after line from that starts a document
// ("---" at the start of the line, alone or before a space), or 0.
func markerAfter(data []byte, from int) int {
	for i, l := range bytes.Split(data, []byte("\n")) {
		l = bytes.TrimRight(l, "\r")
		if i+1 > from && bytes.HasPrefix(l, []byte("---")) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t') {
			return i + 1
		}
	}
	return 0
}

// checkFoldedKeys reports mapping keys that differ only in case: viper would
// merge them silently.
func (d *decoder) checkFoldedKeys(doc *yaml.Node) bool {
	ok := true
	var walk func(n *yaml.Node, depth int, path string)
	walk = func(n *yaml.Node, depth int, path string) {
		if depth > maxDepth {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			seen := make(map[string]*yaml.Node)
			kept := n.Content[:0]
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Kind != yaml.ScalarNode {
					// YAML allows "? [a, b]" as a key; viper then fails
					// with a Go dump of the key and no line.
					d.errs = append(d.errs, &FieldError{File: d.file, Line: k.Line, Field: path,
						Msg: "a key is a name: not a list, a mapping or an alias (did a \"? \" or a \"*\" slip in?)"})
					ok = false
					continue
				}
				low := strings.ToLower(k.Value)
				if prev, dup := seen[low]; dup && k.Tag != "!!merge" {
					msg := fmt.Sprintf("key %q repeats line %d", k.Value, prev.Line)
					if prev.Value != k.Value {
						msg = fmt.Sprintf("key %q repeats %q (line %d): keys are case-insensitive", k.Value, prev.Value, prev.Line)
					}
					d.errs = append(d.errs, &FieldError{File: d.file, Line: k.Line, Field: join(path, k.Value), Msg: msg})
					ok = false
					continue // dropped: the first one stays
				}
				seen[low] = k
				walk(v, depth+1, join(path, k.Value))
				kept = append(kept, k, v)
			}
			n.Content = kept
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, depth+1, fmt.Sprintf("%s[%d]", path, i))
			}
		default:
			for _, c := range n.Content {
				walk(c, depth+1, path)
			}
		}
	}
	walk(doc, 0, "")
	return ok
}

var yamlLineRE = regexp.MustCompile(`line (\d+): `)

// yamlError turns a YAML syntax error ("yaml: line 7: mapping values are not
// allowed in this context") into "file:7: mapping values ...".
func yamlError(file string, err error) *FieldError {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "While parsing config: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	if strings.Contains(msg, "found character that cannot start any token") {
		msg += " (a tab? YAML indents with spaces only)"
	}
	line := 0
	if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil {
		line, _ = strconv.Atoi(msg[m[2]:m[3]])
		msg = msg[:m[0]] + msg[m[1]:]
		// yaml.v3 reports parser (not scanner) errors at the 0-based line
		// of the enclosing collection's start: name that line, 1-based.
		if strings.HasPrefix(msg, "did not find expected") {
			line++
			msg += " (in the mapping or list that starts on this line)"
		}
	}
	return &FieldError{File: file, Line: line, Msg: msg}
}

// problemLine finds the line of a "did not find expected ..." error: the
// YAML parser names the line where the enclosing mapping or list starts
// (line 8 for a bad indentation on line 21 of the `ib:` mapping it is in),
// not the line it stumbled on. That line is the first whose prefix of the
// file fails to parse with the very same error; 0 if none is found (or
// the error is of another kind), and the caller keeps the parser's.
func problemLine(data []byte, err error, from int) int {
	if !strings.Contains(err.Error(), "did not find expected") || from < 1 {
		return 0
	}
	return firstFailingLine(data, err, from)
}

// firstFailingLine is the first line, from line from on, whose prefix of
// the file fails to parse with the very same error as the whole file; 0 if
// none does.
func firstFailingLine(data []byte, err error, from int) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 5000 {
		return 0 // one parse per line: not for a huge file
	}
	var prefix []byte
	for i, l := range lines {
		prefix = append(prefix, l...)
		if i+1 < from {
			continue
		}
		var doc yaml.Node
		if perr := yaml.Unmarshal(prefix, &doc); perr != nil && perr.Error() == err.Error() {
			return i + 1
		}
	}
	return 0
}

// decoder turns viper's settings into a Spec, collecting every problem with
// its position.
type decoder struct {
	file  string
	pos   *posIndex
	errs  ErrorList
	warns ErrorList
	// dropped counts errors beyond maxErrors.
	dropped int
	// portWarns gathers warnings that differ only in the port they name
	// (warnPorts), to be said once with the list of ports.
	portWarns map[[2]string]*portWarn
	portOrder [][2]string
	// badNodes are topology.nodes entries already reported as invalid:
	// a link or flow naming one is not reported again as an unknown node.
	badNodes map[string]bool
}

func (d *decoder) errorf(path, format string, args ...any) {
	if len(d.errs) >= maxErrors {
		d.dropped++
		return
	}
	line := 0
	if d.pos != nil {
		line = d.pos.line(path)
	}
	d.errs = append(d.errs, &FieldError{File: d.file, Line: line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) warnf(path, format string, args ...any) {
	d.warns = append(d.warns, &FieldError{File: d.file, Line: d.pos.line(path), Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) line(path string) int { return d.pos.line(path) }
