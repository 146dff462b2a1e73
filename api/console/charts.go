package console

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/api"
)

// The charts page: the pipeline over the last hour and the last day, drawn
// on the server as SVG (no script; the console's CSP stays strict) from
// pipeline_minutes (api.Inbox.Charts).

// ChartsPage is the charts page's data.
type ChartsPage struct {
	Provider string
	Problem  string
	Ranges   []ChartRange
}

// ChartRange is one range's three charts and its totals.
type ChartRange struct {
	Name, ID                               string
	Events, Latency, Queues                template.HTML
	Accepted, Duplicate, Rejected, Refused int
}

// chartRanges: the last hour by minute, the last day by 10 minutes.
var chartRanges = []struct {
	name, id   string
	span, step time.Duration
}{{"Last hour", "hour", time.Hour, time.Minute}, {"Last day", "day", 24 * time.Hour, 10 * time.Minute}}

func (c *Console) charts(w http.ResponseWriter, r *http.Request) {
	pg := &ChartsPage{Provider: strings.TrimSpace(r.URL.Query().Get("provider"))}
	if err := (api.EventFilter{Provider: pg.Provider}).Validate(); err != nil {
		pg.Problem = problemText(err)
		c.render(w, r, http.StatusBadRequest, "charts", "Charts", pg)
		return
	}
	for _, cr := range chartRanges {
		ch, err := c.inbox.Charts(r.Context(), pg.Provider, cr.span, cr.step)
		if err != nil {
			c.dbError(w, r, err)
			return
		}
		pick := func(f func(api.ChartPoint) float64) []float64 {
			out := make([]float64, len(ch.Points))
			for i, p := range ch.Points {
				out[i] = f(p)
			}
			return out
		}
		total := func(f func(api.ChartPoint) float64) int {
			var n float64
			for _, p := range ch.Points {
				n += f(p) * cr.step.Minutes()
			}
			return int(math.Round(n))
		}
		pg.Ranges = append(pg.Ranges, ChartRange{
			Name: cr.name, ID: cr.id,
			Accepted:  total(func(p api.ChartPoint) float64 { return p.Accepted }),
			Duplicate: total(func(p api.ChartPoint) float64 { return p.Duplicate }),
			Rejected:  total(func(p api.ChartPoint) float64 { return p.Rejected }),
			Refused:   total(func(p api.ChartPoint) float64 { return p.Refused }),
			Events: svgChart("Events per minute by answer", "/min", ch.From, ch.To, []chartSeries{
				{"accepted", "accepted", pick(func(p api.ChartPoint) float64 { return p.Accepted })},
				{"duplicate", "duplicate", pick(func(p api.ChartPoint) float64 { return p.Duplicate })},
				{"rejected (4xx)", "rejected", pick(func(p api.ChartPoint) float64 { return p.Rejected })},
				{"refused or unavailable (429, 5xx)", "refused", pick(func(p api.ChartPoint) float64 { return p.Refused })},
			}),
			Latency: svgChart("Ack latency", " ms", ch.From, ch.To, []chartSeries{
				{"p50", "p50", pick(func(p api.ChartPoint) float64 { return p.P50 })},
				{"p99", "p99", pick(func(p api.ChartPoint) float64 { return p.P99 })},
			}),
			Queues: svgChart("Queue age per stage", " s", ch.From, ch.To, []chartSeries{
				{"relay (oldest unpublished outbox row)", "relay", pick(func(p api.ChartPoint) float64 { return p.RelayAge })},
				{"consumers (oldest unfinished event)", "consume", pick(func(p api.ChartPoint) float64 { return p.ConsumeAge })},
			}),
		})
	}
	c.render(w, r, http.StatusOK, "charts", "Charts", pg)
}

// chartSeries is one line of a chart; NaN values are gaps.
type chartSeries struct {
	name, class string
	values      []float64
}

const (
	chartW, chartH           = 720, 180
	padL, padR, padT, padB   = 56, 40, 12, 28
	plotW, plotH             = chartW - padL - padR, chartH - padT - padB
	chartTimeFormat          = "15:04"
	chartTimeFormatWithDay   = "Jan 2 15:04"
	chartLegendSwatch        = 10
	chartLegendLineHeight    = 16
	chartMinimumVisibleRange = 1e-9
)

// svgChart draws series as an SVG line chart from from to to, the y axis
// from 0 to the largest value (its label with unit), with a legend. Every
// text it writes is escaped; the values are numbers.
func svgChart(title, unit string, from, to time.Time, series []chartSeries) template.HTML {
	top := 0.0
	n := 0
	for _, s := range series {
		n = max(n, len(s.values))
		for _, v := range s.values {
			if !math.IsNaN(v) && v > top {
				top = v
			}
		}
	}
	if top < chartMinimumVisibleRange {
		top = 1
	}
	esc := template.HTMLEscapeString
	var b strings.Builder
	legendH := chartLegendLineHeight * len(series)
	fmt.Fprintf(&b, `<figure class="chart"><figcaption>%s</figcaption><svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, esc(title),
		chartW, chartH+legendH, chartW, chartH+legendH, esc(title))
	fmt.Fprintf(&b, `<title>%s</title>`, esc(title))
	fmt.Fprintf(&b, `<rect class="plot" x="%d" y="%d" width="%d" height="%d"/>`, padL, padT, plotW, plotH)
	for i := 0; i <= 4; i++ { // grid lines and y labels
		y := float64(padT) + float64(plotH)*float64(i)/4
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, padL, y, padL+plotW, y)
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, y+4, esc(number(top*float64(4-i)/4)+unit))
	}
	layout := chartTimeFormat
	if to.Sub(from) > 12*time.Hour {
		layout = chartTimeFormatWithDay
	}
	for i := 0; i <= 4; i++ { // x labels
		x := float64(padL) + float64(plotW)*float64(i)/4
		at := from.Add(time.Duration(float64(to.Sub(from)) * float64(i) / 4)).UTC()
		anchor := "middle"
		if i == 4 {
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x, chartH-8, anchor, esc(at.Format(layout)))
	}
	for si, s := range series {
		var pts []string
		flush := func() {
			switch {
			case len(pts) == 1: // an isolated minute: a dot, which a one-point line would not draw
				x, y, _ := strings.Cut(pts[0], ",")
				fmt.Fprintf(&b, `<circle class="dot series-%s" cx="%s" cy="%s" r="2.5"/>`, esc(s.class), x, y)
			case len(pts) > 1:
				fmt.Fprintf(&b, `<polyline class="series series-%s" points="%s"/>`, esc(s.class), strings.Join(pts, " "))
			}
			pts = nil
		}
		for i, v := range s.values {
			if math.IsNaN(v) {
				flush()
				continue
			}
			x := float64(padL) + float64(plotW)*(float64(i)+0.5)/float64(max(n, 1))
			y := float64(padT) + float64(plotH)*(1-v/top)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		flush()
		ly := chartH + chartLegendLineHeight*si + 4
		fmt.Fprintf(&b, `<rect class="swatch series-%s" x="%d" y="%d" width="%d" height="%d"/>`, esc(s.class), padL, ly, chartLegendSwatch, chartLegendSwatch)
		fmt.Fprintf(&b, `<text class="legend" x="%d" y="%d">%s</text>`, padL+chartLegendSwatch+6, ly+9, esc(s.name))
	}
	b.WriteString(`</svg></figure>`)
	return template.HTML(b.String()) //nolint:gosec // built here from escaped text and numbers
}

// number formats an axis value compactly.
func number(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}
