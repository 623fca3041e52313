package lab

import (
	"fmt"
	"unicode/utf8"
)

// Name rules. Lab, node and port names become Linux names in the namespace
// lab (namespaces emu-<lab>-<node>, interfaces, TAP devices), so they are
// limited to what every tool accepts unquoted: ASCII letters, digits, '_'
// and '-', not starting with '-', and at most 15 bytes (IFNAMSIZ - 1, the
// kernel's limit on interface names). Names of QoS table entries and flows
// only appear in files and tables; they may also contain '.' (SONiC writes
// "scheduler.0") and '/' (expanded flow names), up to 64 bytes.

// MaxNameLen is the longest lab, node or port name.
const MaxNameLen = 15

// reservedIfName are interface names a namespace already has ("lo") or
// the kernel refuses (TUNSETIFF answers EINVAL: "all" and "default" name
// the defaults under /proc/sys/net/*/conf/): a NIC's port named so would
// fail only at `up`, as "TUNSETIFF lo: invalid argument".
var reservedIfName = map[string]string{
	"lo":      "every namespace has its loopback interface lo already",
	"all":     "the kernel refuses it as an interface name (it names /proc/sys/net/*/conf/all)",
	"default": "the kernel refuses it as an interface name (it names /proc/sys/net/*/conf/default)",
}

// checkName validates a lab, node or port name.
func checkName(s string) error {
	return checkChars(s, MaxNameLen, "")
}

// checkEntryName validates a QoS entry or flow name.
func checkEntryName(s string) error {
	return checkChars(s, 64, "./")
}

func checkChars(s string, maxLen int, extra string) error {
	if s == "" {
		return fmt.Errorf("empty name")
	}
	if len(s) > maxLen {
		return fmt.Errorf("name %q is %d bytes long; at most %d", shortName(s), len(s), maxLen)
	}
	if s[0] == '-' {
		return fmt.Errorf("name %q must not start with '-'", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		for j := 0; j < len(extra) && !ok; j++ {
			ok = c == extra[j]
		}
		if !ok {
			allowed := "letters, digits, '_' and '-'"
			if extra != "" {
				allowed = "letters, digits, '_', '-', '.' and '/'"
			}
			// Name the character as written: a byte of a UTF-8 sequence
			// quoted alone reads as another letter ('é' is "\xc3\xa9", and
			// %q of the byte 0xc3 prints 'Ã').
			r, _ := utf8.DecodeRuneInString(s[i:])
			return fmt.Errorf("name %q has %q: only %s are allowed", shortName(s), r, allowed)
		}
	}
	return nil
}

// shortName is s for an error message: a name pasted by mistake can be
// megabytes long, and the message must stay one readable line.
func shortName(s string) string {
	const keep = 80
	if len(s) <= keep {
		return s
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
