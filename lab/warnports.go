package lab

import (
	"fmt"
	"strings"
)

type portWarn struct {
	path, format string
	ports        []string
}

// warnPorts is warnf for a warning about one port among many with the same
// problem (a top-level profile's headroom on every port of every switch
// it is bound to): the message's %%s is replaced by the list of ports,
// and the warning is said once per path and message.
func (d *decoder) warnPorts(path, port, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	key := [2]string{path, msg}
	if d.portWarns == nil {
		d.portWarns = make(map[[2]string]*portWarn)
	}
	w := d.portWarns[key]
	if w == nil {
		w = &portWarn{path: path, format: msg}
		d.portWarns[key] = w
		d.portOrder = append(d.portOrder, key)
	}
	for _, p := range w.ports {
		if p == port {
			return
		}
	}
	w.ports = append(w.ports, port)
}

func (d *decoder) flushPortWarnings() {
	for _, key := range d.portOrder {
		w := d.portWarns[key]
		d.warnf(w.path, w.format, strings.Join(w.ports, ", "))
	}
	d.portWarns, d.portOrder = nil, nil
}
