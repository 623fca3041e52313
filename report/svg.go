// Package report renders simulation results for people: aligned text
// tables, CSV files for spreadsheets and pandas, and SVG charts.
//
// The charts are hand-written SVG (a line chart and a timeline of on/off
// states) rather than a plotting library: they need axes, ticks, a legend and
// polylines, nothing more, and the output is small, deterministic (golden
// tests compare bytes) and opens in any browser. No dependency to keep up.
package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// palette is Tableau 10: distinguishable, colour-blind friendly enough.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// Line is one series of a chart.
type Line struct {
	Name string
	X, Y []float64
}

// Chart is a line chart.
type Chart struct {
	Title, XLabel, YLabel string
	Lines                 []Line
	// Step draws each line as a step function (value holds until the next
	// sample), as sampled counters are.
	Step bool
	// Width and Height in pixels; zero means 900 × 420.
	Width, Height int
	// Note is printed under the title (e.g. "12 more series not shown").
	Note string
}

const (
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 48
	marginBottom = 48
	legendRow    = 16
)

// WriteSVG renders the chart.
func (c *Chart) WriteSVG(w io.Writer) error {
	width, height := c.Width, c.Height
	if width == 0 {
		width = 900
	}
	if height == 0 {
		height = 420
	}
	legendCols := max(1, (width-marginLeft-marginRight)/180)
	legendRows := (len(c.Lines) + legendCols - 1) / legendCols
	plotW := float64(width - marginLeft - marginRight)
	plotH := float64(height - marginTop - marginBottom)
	total := height + legendRows*legendRow + 14

	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, l := range c.Lines {
		for i := range l.X {
			if i >= len(l.Y) || !finite(l.X[i]) || !finite(l.Y[i]) {
				continue
			}
			xmin, xmax = math.Min(xmin, l.X[i]), math.Max(xmax, l.X[i])
			ymin, ymax = math.Min(ymin, l.Y[i]), math.Max(ymax, l.Y[i])
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax, ymax = 0, 1, 1
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	if ymax <= ymin {
		ymax = ymin + 1
	}
	xt := ticks(xmin, xmax, 8)
	yt := ticks(ymin, ymax, 6)
	xmin, xmax = math.Min(xmin, xt[0]), math.Max(xmax, xt[len(xt)-1])
	ymin, ymax = math.Min(ymin, yt[0]), math.Max(ymax, yt[len(yt)-1])
	px := func(x float64) float64 { return marginLeft + (x-xmin)/(xmax-xmin)*plotW }
	py := func(y float64) float64 { return marginTop + plotH - (y-ymin)/(ymax-ymin)*plotH }

	b := bufio.NewWriter(w)
	header(b, width, total, c.Title, c.Note)
	// Grid, ticks and labels.
	for _, t := range yt {
		y := py(t)
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#e5e5e5"/>`+"\n", marginLeft, f1(y), f1(marginLeft+plotW), f1(y))
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", marginLeft-6, f1(y), num(t))
	}
	for _, t := range xt {
		x := px(t)
		fmt.Fprintf(b, `<line x1="%s" y1="%d" x2="%s" y2="%s" stroke="#e5e5e5"/>`+"\n", f1(x), marginTop, f1(x), f1(marginTop+plotH))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", f1(x), f1(marginTop+plotH+16), num(t))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%s" height="%s" fill="none" stroke="#888"/>`+"\n", marginLeft, marginTop, f1(plotW), f1(plotH))
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", f1(marginLeft+plotW/2), f1(marginTop+plotH+36), esc(c.XLabel))
	fmt.Fprintf(b, `<text transform="translate(16 %s) rotate(-90)" text-anchor="middle">%s</text>`+"\n", f1(marginTop+plotH/2), esc(c.YLabel))

	for i, l := range c.Lines {
		color := palette[i%len(palette)]
		var pts strings.Builder
		prevY := math.NaN()
		n := min(len(l.X), len(l.Y))
		for j := 0; j < n; j++ {
			x, y := l.X[j], l.Y[j]
			if !finite(x) || !finite(y) {
				continue
			}
			// Drop interior points of flat runs: long idle or saturated
			// stretches cost two points, not thousands.
			if j > 0 && j < n-1 && y == prevY && l.Y[j+1] == y {
				continue
			}
			if c.Step && j > 0 && finite(prevY) && y != prevY {
				fmt.Fprintf(&pts, "%s,%s ", f1(px(x)), f1(py(prevY)))
			}
			fmt.Fprintf(&pts, "%s,%s ", f1(px(x)), f1(py(y)))
			prevY = y
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s</title></polyline>`+"\n",
			color, strings.TrimSpace(pts.String()), esc(l.Name))
	}
	legend(b, c.Lines, legendCols, height+6)
	b.WriteString("</svg>\n")
	return b.Flush()
}

func header(b *bufio.Writer, width, height int, title, note string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", marginLeft, esc(title))
	if note != "" {
		fmt.Fprintf(b, `<text x="%d" y="36" fill="#666">%s</text>`+"\n", marginLeft, esc(note))
	}
}

func legend(b *bufio.Writer, lines []Line, cols, top int) {
	for i, l := range lines {
		x := marginLeft + (i%cols)*180
		y := top + (i/cols)*legendRow
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="4" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			x, y-4, palette[i%len(palette)], x+16, y, esc(l.Name))
	}
}

// Interval is a period [From, To) a timeline row is on.
type Interval struct{ From, To float64 }

// Row is one lane of a timeline.
type Row struct {
	Name string
	On   []Interval
}

// Timeline draws rows of on/off periods over time (which queue was paused
// when), one lane per row.
type Timeline struct {
	Title, XLabel string
	XMin, XMax    float64
	Rows          []Row
	Width         int // zero: 900
	Note          string
}

// WriteSVG renders the timeline.
func (t *Timeline) WriteSVG(w io.Writer) error {
	width := t.Width
	if width == 0 {
		width = 900
	}
	const lane = 18
	left := 140
	plotW := float64(width - left - marginRight)
	plotH := float64(max(1, len(t.Rows)) * lane)
	height := marginTop + int(plotH) + marginBottom
	xmin, xmax := t.XMin, t.XMax
	if xmax <= xmin {
		xmax = xmin + 1
	}
	xt := ticks(xmin, xmax, 8)
	px := func(x float64) float64 { return float64(left) + (x-xmin)/(xmax-xmin)*plotW }

	b := bufio.NewWriter(w)
	header(b, width, height, t.Title, t.Note)
	for _, v := range xt {
		if v < xmin || v > xmax {
			continue
		}
		x := px(v)
		fmt.Fprintf(b, `<line x1="%s" y1="%d" x2="%s" y2="%s" stroke="#e5e5e5"/>`+"\n", f1(x), marginTop, f1(x), f1(marginTop+plotH))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", f1(x), f1(marginTop+plotH+16), num(v))
	}
	for i, r := range t.Rows {
		y := marginTop + i*lane
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, y+lane/2, esc(r.Name))
		color := palette[i%len(palette)]
		for _, iv := range r.On {
			x0, x1 := px(math.Max(iv.From, xmin)), px(math.Min(iv.To, xmax))
			if x1 <= x0 {
				x1 = x0 + 0.5
			}
			fmt.Fprintf(b, `<rect x="%s" y="%d" width="%s" height="%d" fill="%s"/>`+"\n", f1(x0), y+3, f1(x1-x0), lane-6, color)
		}
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%s" height="%s" fill="none" stroke="#888"/>`+"\n", left, marginTop, f1(plotW), f1(plotH))
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", f1(float64(left)+plotW/2), f1(marginTop+plotH+36), esc(t.XLabel))
	b.WriteString("</svg>\n")
	return b.Flush()
}

// ticks returns about n round tick values (1, 2, 5 × 10^k steps) covering
// [lo, hi].
func ticks(lo, hi float64, n int) []float64 {
	span := hi - lo
	if !(span > 0) || !finite(span) {
		return []float64{lo}
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	// Integer multiples of step, rounded to 12 significant digits so that
	// 3 × 0.2 prints as 0.6.
	at := func(k float64) float64 {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(k*step, 'g', 12, 64), 64)
		return v
	}
	k := math.Floor(lo / step)
	var out []float64
	for ; at(k) <= hi+step*1e-9 && len(out) < 100; k++ {
		out = append(out, at(k))
	}
	if out[len(out)-1] < hi {
		out = append(out, at(k))
	}
	return out
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// f1 formats a coordinate with one decimal, trimmed.
func f1(f float64) string {
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// num formats a tick label.
func num(f float64) string {
	if f == 0 {
		return "0"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
