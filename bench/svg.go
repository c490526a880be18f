package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ChartWidth is every chart's width in pixels, so the charts line up in the README.
const ChartWidth = 720

// svg writes an SVG document by hand: the charts need a handful of elements, not a library,
// and fixed number formatting keeps the bytes the same for the same input.
type svg struct {
	b strings.Builder
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

func esc(s string) string { return xmlEscaper.Replace(s) }

// px prints a coordinate with one decimal, trimmed: "12", "12.5".
func px(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func (s *svg) open(height float64, title string) {
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%s" viewBox="0 0 %d %s" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		ChartWidth, px(height), ChartWidth, px(height))
	fmt.Fprintf(&s.b, "<title>%s</title>\n", esc(title))
	// A white ground, so the chart reads on a dark page too.
	fmt.Fprintf(&s.b, `<rect width="%d" height="%s" fill="#ffffff"/>`+"\n", ChartWidth, px(height))
}

func (s *svg) close() string {
	s.b.WriteString("</svg>\n")
	return s.b.String()
}

// textStyle is a text element's attributes beyond its position.
type textStyle struct {
	anchor string // "start" (default), "middle", "end"
	size   int    // 0: the document's 12
	bold   bool
	fill   string
	class  string // with data, lets the tests find a bar's label
	data   string
	halo   bool // a white outline, so a grid or goal line under the text does not cut it
}

func (s *svg) text(x, y float64, st textStyle, body string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s"`, px(x), px(y))
	if st.class != "" {
		fmt.Fprintf(&s.b, ` class="%s"`, esc(st.class))
	}
	if st.data != "" {
		fmt.Fprintf(&s.b, ` data-case="%s"`, esc(st.data))
	}
	if st.anchor != "" && st.anchor != "start" {
		fmt.Fprintf(&s.b, ` text-anchor="%s"`, st.anchor)
	}
	if st.size != 0 {
		fmt.Fprintf(&s.b, ` font-size="%d"`, st.size)
	}
	if st.bold {
		s.b.WriteString(` font-weight="bold"`)
	}
	if st.fill != "" {
		fmt.Fprintf(&s.b, ` fill="%s"`, st.fill)
	}
	if st.halo {
		s.b.WriteString(` stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke"`)
	}
	fmt.Fprintf(&s.b, ">%s</text>\n", esc(body))
}

// bar is a filled rectangle; class and dataCase name it for the tests ("" to leave out).
func (s *svg) bar(x, y, w, h float64, fill, class, dataCase string) {
	fmt.Fprintf(&s.b, `<rect`)
	if class != "" {
		fmt.Fprintf(&s.b, ` class="%s"`, esc(class))
	}
	if dataCase != "" {
		fmt.Fprintf(&s.b, ` data-case="%s"`, esc(dataCase))
	}
	fmt.Fprintf(&s.b, ` x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n", px(x), px(y), px(w), px(h), fill)
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, dashed bool) {
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1"`, px(x1), px(y1), px(x2), px(y2), stroke)
	if dashed {
		s.b.WriteString(` stroke-dasharray="4 3"`)
	}
	s.b.WriteString("/>\n")
}

// axis is a linear scale from 0 to max over the pixels [x0, x1].
type axis struct {
	max, step float64
	x0, x1    float64
}

// newAxis rounds top up to a tick of a 1-2-2.5-5 step, about five ticks, so the labels are
// round numbers.
func newAxis(top, x0, x1 float64) axis {
	if top <= 0 || math.IsNaN(top) || math.IsInf(top, 0) {
		top = 1
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	return axis{max: math.Ceil(top/step-1e-9) * step, step: step, x0: x0, x1: x1}
}

func (a axis) x(v float64) float64 { return a.x0 + (a.x1-a.x0)*v/a.max }

// ticks are the axis's tick values, 0 included.
func (a axis) ticks() []float64 {
	n := int(math.Round(a.max / a.step))
	out := make([]float64, 0, n+1)
	for i := 0; i <= n; i++ {
		out = append(out, float64(i)*a.step)
	}
	return out
}

// tickLabel prints a tick without float noise: 0.30000000000000004 is "0.3".
func tickLabel(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// gridLines draws the tick lines from top to bottom: per section, so they do not cross its
// heading.
func (s *svg) gridLines(a axis, top, bottom float64) {
	for _, t := range a.ticks() {
		s.line(a.x(t), top, a.x(t), bottom, "#e3e3e3", false)
	}
}

// xAxis draws the axis line at y, the tick labels and the axis title under it.
func (s *svg) xAxis(a axis, y float64, unit, title string) {
	s.line(a.x0, y, a.x1, y, "#555555", false)
	for _, t := range a.ticks() {
		s.line(a.x(t), y, a.x(t), y+4, "#555555", false)
		s.text(a.x(t), y+16, textStyle{anchor: "middle", size: 11, fill: "#444444"}, tickLabel(t)+unit)
	}
	s.text((a.x0+a.x1)/2, y+34, textStyle{anchor: "middle", fill: "#222222"}, title)
}
