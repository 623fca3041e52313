package dissect

import (
	"encoding/json"
	"strconv"
)

// Object is a JSON object whose members keep the order they were added in:
// headers appear in wire order and fields in the order the spec draws them,
// so `emulab decode` output reads like the packet and stays byte-stable for
// golden files.
type Object []Member

// Member is one name/value pair of an Object. Value is one of: bool, int,
// uint8, uint16, uint32, uint64, string, Object, []uint16.
type Member struct {
	Name  string
	Value any
}

// Add appends a member and returns the extended object.
func (o Object) Add(name string, v any) Object { return append(o, Member{name, v}) }

// Get returns the value of the first member called name.
func (o Object) Get(name string) (any, bool) {
	for _, m := range o {
		if m.Name == name {
			return m.Value, true
		}
	}
	return nil, false
}

// MarshalJSON writes the members in order.
func (o Object) MarshalJSON() ([]byte, error) { return o.appendJSON(nil), nil }

func (o Object) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, m.Name)
		b = append(b, ':')
		b = appendValue(b, m.Value)
	}
	return append(b, '}')
}

func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case Object:
		return x.appendJSON(b)
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case string:
		return appendString(b, x)
	case []uint16:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(e), 10)
		}
		return append(b, ']')
	}
	// Unreachable for the values this package builds; fall back to the
	// standard encoder rather than writing invalid JSON.
	j, err := json.Marshal(v)
	if err != nil {
		return strconv.AppendQuote(b, err.Error())
	}
	return append(b, j...)
}

func bit(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

// appendString writes s as a JSON string. strconv.Quote is not JSON (it
// writes \x escapes), and comments in a capture may hold any bytes.
func appendString(b []byte, s string) []byte {
	j, _ := json.Marshal(s) // a string always marshals
	return append(b, j...)
}
