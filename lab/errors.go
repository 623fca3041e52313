package lab

import (
	"fmt"
	"sort"
	"strings"
)

// FieldError is one problem in a lab file: where it is and what is wrong.
// Its text is "file:line: field.path: message", the form editors and
// compilers use, so a terminal or an IDE jumps to the line.
type FieldError struct {
	File  string
	Line  int    // 1-based; 0 when unknown (then only the file is named)
	Field string // e.g. "topology.links[2].endpoints[1]"; "" for the whole file
	Msg   string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem Load found, in line order. Load returns one
// (as an error) when the file is invalid.
type ErrorList []*FieldError

func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find the individual FieldErrors.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// sortDedup orders the list by line, then field, and drops exact repeats
// (a top-level qos mistake is found once per switch it applies to).
func (l ErrorList) sortDedup() ErrorList {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].Line != l[j].Line {
			return l[i].Line < l[j].Line
		}
		return l[i].Field < l[j].Field
	})
	out := l[:0]
	for i, e := range l {
		if i > 0 && *e == *l[i-1] {
			continue
		}
		out = append(out, e)
	}
	return out
}
