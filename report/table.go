package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Table is an aligned text table: text columns left-aligned, numeric columns
// right-aligned (a column is numeric when its header says so).
type Table struct {
	Header []string
	// Right marks right-aligned (numeric) columns.
	Right []bool
	Rows  [][]string
}

// Add appends a row; missing cells are blank.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write renders the table with two spaces between columns.
func (t *Table) Write(w io.Writer) error {
	widths := make([]int, len(t.Header))
	for i, h := range t.Header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.Rows {
		for i := 0; i < len(r) && i < len(widths); i++ {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i := range widths {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(t.Right) && t.Right[i] {
				b.WriteString(pad + c)
			} else if i == len(widths)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + pad)
			}
		}
		b.WriteString("\n")
	}
	line(t.Header)
	rule := make([]string, len(widths))
	for i, w := range widths {
		rule[i] = strings.Repeat("-", w)
	}
	line(rule)
	for _, r := range t.Rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Bytes renders a byte count compactly: 1500 B, 64 KiB, 1.5 MiB.
func Bytes(n uint64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return trim(float64(n)/(1<<10)) + " KiB"
	case n < 1<<30:
		return trim(float64(n)/(1<<20)) + " MiB"
	}
	return trim(float64(n)/(1<<30)) + " GiB"
}

// Gbps renders bits per second in Gb/s with three significant digits.
func Gbps(bps float64) string {
	if bps == 0 {
		return "0"
	}
	return fmt.Sprintf("%.3g Gb/s", bps/1e9)
}

func trim(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}
