package lab

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
)

// A Spec is what its lab file says. The daemons of a real lab read the
// file, not the Spec (up passes them its path), while up itself reads
// the Spec (MTUs, addresses, routes): a Spec changed in memory after
// Parse or Load would be half applied, an MTU taken and a loss rate
// ignored. Start refuses such a Spec rather than guess which half was
// meant; the way to change a lab is to change its text and parse it.

// checkUnedited parses again the text s was parsed from (its file, for a
// Spec that was not made by Parse) and returns an error naming the first
// exported field whose value differs, nil when none does.
func (s *Spec) checkUnedited() error {
	src := s.source
	if src == nil {
		b, err := os.ReadFile(s.File)
		if err != nil {
			return fmt.Errorf("spec %q was not made by Load or Parse, and its File does not read: %w", s.File, err)
		}
		src = b
	}
	fresh, err := Parse(s.File, src)
	if err != nil {
		return fmt.Errorf("spec %s: its text does not parse: %w", s.File, err)
	}
	if d := specDiff(reflect.ValueOf(s).Elem(), reflect.ValueOf(fresh).Elem()); d != "" {
		return fmt.Errorf("spec %s was changed after it was parsed (%s): the daemons read the lab file, not the Spec, so the change would be half applied; change the YAML text and Parse it (lab.Parse), or Load a changed file", s.File, d)
	}
	return nil
}

// specDiff describes the first difference between two Specs, a (the
// caller's) and b (the text's), "" when there is none. Unexported fields
// are skipped: they are caches (routing's hop counts, keyed by node
// pointers, which two parses never share) and positions, which no caller
// can set. The parts of a Spec point at each other (a node's port at its
// link, a link's ports at their nodes), so one change is reachable by many
// paths: the walk is breadth first, and reports the shortest
// (Links[0].LinkParams.Loss, not Nodes[0].Ports[0].Link.LinkParams.Loss).
func specDiff(a, b reflect.Value) string {
	type item struct {
		a, b reflect.Value
		path string
	}
	seen := map[[2]uintptr]bool{} // pointer pairs queued already
	queue := []item{{a, b, ""}}
next:
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		a, b, path := it.a, it.b, it.path
		// Pointers and interfaces add nothing to the path.
		for a.Kind() == reflect.Pointer || a.Kind() == reflect.Interface {
			if a.IsNil() || b.IsNil() {
				if a.IsNil() != b.IsNil() {
					return path + ": set in one, nil in the other"
				}
				continue next
			}
			if a.Kind() == reflect.Pointer {
				k := [2]uintptr{a.Pointer(), b.Pointer()}
				if seen[k] {
					continue next
				}
				seen[k] = true
			} else if a.Elem().Type() != b.Elem().Type() {
				return fmt.Sprintf("%s: a %s, the text has a %s", path, a.Elem().Type(), b.Elem().Type())
			}
			a, b = a.Elem(), b.Elem()
		}
		switch a.Kind() {
		case reflect.Struct:
			for i := range a.NumField() {
				f := a.Type().Field(i)
				if !f.IsExported() {
					continue
				}
				p := f.Name
				if path != "" {
					p = path + "." + f.Name
				}
				queue = append(queue, item{a.Field(i), b.Field(i), p})
			}
		case reflect.Slice, reflect.Array:
			if a.Len() != b.Len() {
				return fmt.Sprintf("%s: %d entries, the text has %d", path, a.Len(), b.Len())
			}
			for i := range a.Len() {
				queue = append(queue, item{a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)})
			}
		case reflect.Map:
			if a.Len() != b.Len() {
				return fmt.Sprintf("%s: %d entries, the text has %d", path, a.Len(), b.Len())
			}
			keys := a.MapKeys()
			slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
			for _, k := range keys {
				bv := b.MapIndex(k)
				if !bv.IsValid() {
					return fmt.Sprintf("%s[%v]: not in the text", path, k)
				}
				queue = append(queue, item{a.MapIndex(k), bv, fmt.Sprintf("%s[%v]", path, k)})
			}
		case reflect.Func, reflect.Chan, reflect.UnsafePointer:
			if a.IsNil() != b.IsNil() {
				return path + ": set in one, nil in the other"
			}
		default:
			if !a.Equal(b) {
				return fmt.Sprintf("%s: %v, the text says %v", path, a, b)
			}
		}
	}
	return ""
}
