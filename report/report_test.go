package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	tb := &Table{Header: []string{"flow", "bytes", "note"}, Right: []bool{false, true, false}}
	tb.Add("a", "1 KiB", "x")
	tb.Add("longer", "12 MiB", "")
	var b bytes.Buffer
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "flow     bytes  note\n" +
		"------  ------  ----\n" +
		"a        1 KiB  x\n" +
		"longer  12 MiB  \n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestBytesGbps(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 6 << 20: "6 MiB", 3 << 30: "3 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Gbps(12.34e9); got != "12.3 Gb/s" {
		t.Errorf("Gbps = %q", got)
	}
}

func TestTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 1500, 8, []float64{0, 200, 400, 600, 800, 1000, 1200, 1400, 1600}},
		{0, 1, 5, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{0, 6.3, 6, []float64{0, 2, 4, 6, 8}},
		{5, 5, 6, []float64{5}},
	} {
		if got := ticks(c.lo, c.hi, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ticks(%v, %v, %d) = %v, want %v", c.lo, c.hi, c.n, got, c.want)
		}
	}
}

// wellFormed parses the SVG as XML and returns its polyline point lists.
func wellFormed(t *testing.T, svg string) (polylines []string, texts []string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "polyline" {
				for _, a := range el.Attr {
					if a.Name.Local == "points" {
						polylines = append(polylines, a.Value)
					}
				}
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(el)); s != "" {
				texts = append(texts, s)
			}
		}
	}
}

func TestChartSVG(t *testing.T) {
	c := &Chart{Title: "queues <&>", XLabel: "time (µs)", YLabel: "KiB", Width: 400, Height: 200,
		Lines: []Line{
			{Name: `sw1:p9 "3"`, X: []float64{0, 1, 2, 3, 4, 5}, Y: []float64{0, 5, 5, 5, 5, 2}},
			{Name: "flat", X: []float64{0, 1, 2}, Y: []float64{1, 1, 1}},
		}}
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	lines, texts := wellFormed(t, b.String())
	if len(lines) != 2 {
		t.Fatalf("%d polylines", len(lines))
	}
	// The flat interior points (x = 2, 3) are dropped: 0, 1, 4, 5 remain.
	if n := len(strings.Fields(lines[0])); n != 4 {
		t.Errorf("first line has %d points: %s", n, lines[0])
	}
	joined := strings.Join(texts, "|")
	for _, want := range []string{"queues <&>", "time (µs)", `sw1:p9 "3"`, "flat"} {
		if !strings.Contains(joined, want) {
			t.Errorf("text %q missing from %s", want, joined)
		}
	}
	// Step mode adds a corner at each change.
	c.Step = true
	b.Reset()
	c.WriteSVG(&b)
	lines, _ = wellFormed(t, b.String())
	if n := len(strings.Fields(lines[0])); n != 6 {
		t.Errorf("step line has %d points: %s", n, lines[0])
	}
	// No data still renders axes.
	b.Reset()
	(&Chart{Title: "empty"}).WriteSVG(&b)
	wellFormed(t, b.String())
}

func TestTimelineSVG(t *testing.T) {
	tl := &Timeline{Title: "pause", XLabel: "time (µs)", XMin: 0, XMax: 100,
		Rows: []Row{{Name: "sw1:p1 p3 XOFF", On: []Interval{{10, 20}, {30, 35}}}, {Name: "h1 p3 paused", On: []Interval{{0, 100}}}}}
	var b bytes.Buffer
	if err := tl.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	_, texts := wellFormed(t, b.String())
	if !strings.Contains(strings.Join(texts, "|"), "h1 p3 paused") {
		t.Errorf("texts %v", texts)
	}
	if n := strings.Count(b.String(), `height="12" fill="#`); n != 3 {
		t.Errorf("%d interval rectangles, want 3", n)
	}
}

func TestMovingAverage(t *testing.T) {
	got := movingAverage([]float64{0, 3, 3, 0, 6}, 3)
	want := []float64{0, 1.5, 2, 2, 3}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v want %v", got, want)
	}
}

func TestMostInteresting(t *testing.T) {
	score := []portScore{{0, 0, 10}, {5, 0, 0}, {0, 3, 0}, {0, 3, 99}, {0, 0, 0}}
	// Drops first, then pauses (the pause tie broken by queue), then queue.
	got := mostInteresting(score, 3)
	want := []bool{false, true, true, true, false}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v want %v", got, want)
	}
}

func BenchmarkChartSVG(b *testing.B) {
	c := &Chart{Title: "bench", Step: true}
	for l := 0; l < 10; l++ {
		line := Line{Name: "q"}
		for i := 0; i < 1000; i++ {
			line.X = append(line.X, float64(i))
			line.Y = append(line.Y, float64((i*(l+7))%97))
		}
		c.Lines = append(c.Lines, line)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.WriteSVG(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
