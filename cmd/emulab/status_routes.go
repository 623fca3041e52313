package main

import (
	"fmt"
	"strings"
)

// routedAround gathers the links each switch routes around, for status.
// Converged switches route around the same links: a line for each switch
// repeated one list as many times as the fabric has switches (twelve
// identical lines for a spine link of an 8-leaf, 4-spine fabric), so the
// switches that agree share a line, and one that disagrees (the fabric
// still converging) stands out on its own.
type routedAround struct {
	order []string            // each distinct list, as first seen
	by    map[string][]string // list -> the switches that route around it
}

// add records that sw routes around links (none: nothing to say).
func (r *routedAround) add(sw string, links []string) {
	if len(links) == 0 {
		return
	}
	key := strings.Join(links, " ")
	if r.by == nil {
		r.by = map[string][]string{}
	}
	if _, ok := r.by[key]; !ok {
		r.order = append(r.order, key)
	}
	r.by[key] = append(r.by[key], sw)
}

// lines is status's text, one line per distinct list.
func (r *routedAround) lines() []string {
	var out []string
	for _, key := range r.order {
		sws := r.by[key]
		verb := "routes"
		if len(sws) > 1 {
			verb = "route"
		}
		out = append(out, fmt.Sprintf("  %s %s around: %s", strings.Join(sws, ", "), verb, key))
	}
	return out
}
