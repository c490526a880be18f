package main

import (
	"fmt"
	"strings"
)

// scope narrows every query to the dashboard's job and instance variables.
const scope = `job=~"$job", instance=~"$instance"`

func sel(metric string, matchers ...string) string {
	return metric + "{" + strings.Join(append([]string{scope}, matchers...), ", ") + "}"
}

// by aggregates expr with op ("sum", "min", ...) by the labels, or over everything when labels is "".
func by(op, labels, expr string) string {
	if labels == "" {
		return fmt.Sprintf("%s(%s)", op, expr)
	}
	return fmt.Sprintf("%s by (%s) (%s)", op, labels, expr)
}

func rate(metric string, matchers ...string) string {
	return fmt.Sprintf("rate(%s[$__rate_interval])", sel(metric, matchers...))
}

func increase(window, metric string, matchers ...string) string {
	return fmt.Sprintf("increase(%s[%s])", sel(metric, matchers...), window)
}

// quantile is the q quantile of the histogram metric (its name without _bucket), by the labels.
func quantile(q, labels, metric string, matchers ...string) string {
	le := "le"
	if labels != "" {
		le = labels + ", le"
	}
	return fmt.Sprintf("histogram_quantile(%s, %s)", q, by("sum", le, rate(metric+"_bucket", matchers...)))
}
