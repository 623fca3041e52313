package main

import (
	"strconv"
	"strings"
)

// portRuns writes switch ports ("sw1:p3", in the plan's order: by switch,
// then by port) with each run of consecutive numbered ports of one switch
// as a range, "spine2:p2-p32": a leaf-spine of a few dozen switches keeps
// hundreds of ports out of flooding, and one name each made check's line
// 15,000 characters long.
func portRuns(ports []string) []string {
	var out []string
	for i := 0; i < len(ports); {
		node, base, first, ok := splitNumberedPort(ports[i])
		j := i + 1
		if ok {
			for j < len(ports) {
				n, b, num, ok := splitNumberedPort(ports[j])
				if !ok || n != node || b != base || num != first+(j-i) {
					break
				}
				j++
			}
		}
		if j-i == 1 {
			out = append(out, ports[i])
		} else {
			_, last, _ := strings.Cut(ports[j-1], ":")
			out = append(out, ports[i]+"-"+last)
		}
		i = j
	}
	return out
}

// splitNumberedPort splits "sw1:p12" into "sw1", "p" and 12; ok is false
// for a port name that does not end in a number.
func splitNumberedPort(s string) (node, base string, num int, ok bool) {
	node, port, found := strings.Cut(s, ":")
	if !found {
		return "", "", 0, false
	}
	k := len(port)
	for k > 0 && port[k-1] >= '0' && port[k-1] <= '9' {
		k--
	}
	if k == len(port) || (k < len(port)-1 && port[k] == '0') {
		return "", "", 0, false
	}
	n, err := strconv.Atoi(port[k:])
	if err != nil {
		return "", "", 0, false
	}
	return node, port[:k], n, true
}

// wrapWords joins words with spaces into lines of at most width bytes
// (a longer word stands alone), for lists too long for one line.
func wrapWords(words []string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range words {
		switch {
		case cur == "":
			cur = w
		case len(cur)+1+len(w) > width:
			lines = append(lines, cur)
			cur = w
		default:
			cur += " " + w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
