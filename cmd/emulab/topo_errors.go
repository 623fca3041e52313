package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/emufabric/emufabric/lab"
)

// topoPatterns are the traffic patterns --traffic writes over every host.
var topoPatterns = []string{"incast", "pairs", "all_to_all", "random"}

// topoFlags maps the fields of the file topo writes to the flags that
// wrote them. topo checks its file as up would, and the checker names a
// problem by file, line and field: "leafspine.yaml:4:
// topology.defaults.rate", a file the user never saw (it is not written
// when it has a problem) for a value they gave as --rate.
var topoFlags = []struct{ field, flag string }{
	{"name", "--name"},
	{"topology.defaults.rate", "--rate"},
	{"topology.defaults.delay", "--delay"},
	{"topology.defaults.mtu", "--mtu"},
	{"traffic[0].pattern", "--traffic"},
	{"traffic[0].size", "--size"},
	{"traffic[0].priority", "--priority"},
	{"traffic[0].load", "--load"},
	{"qos", "--lossless"},
}

// topoFlagErrors rewrites the problems of topo's file that come from a
// flag as the flag's. A problem of the traffic entry as a whole that a bad
// --traffic causes ("several sources and destinations: write pattern:
// ...") goes, the --traffic one says it all; one from no flag (a bug of
// the shape) stays as the checker wrote it.
func topoFlagErrors(err error) error {
	var list lab.ErrorList
	if !errors.As(err, &list) {
		return err
	}
	badPattern := false
	for _, e := range list {
		badPattern = badPattern || e.Field == "traffic[0].pattern"
	}
	var out []string
	for _, e := range list {
		if badPattern && e.Field == "traffic[0]" {
			continue
		}
		flag := ""
		for _, f := range topoFlags {
			if e.Field == f.field || strings.HasPrefix(e.Field, f.field+".") {
				flag = f.flag
				break
			}
		}
		if flag == "" {
			out = append(out, e.Error())
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s", flag, e.Msg))
	}
	return errors.New(strings.Join(out, "\n"))
}
