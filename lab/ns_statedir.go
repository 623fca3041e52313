package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Whom a state directory may belong to. The controller runs as root and
// trusts what the directory holds: state.json names the processes it
// kills, the namespaces it deletes and the socket files it removes; it
// appends daemon logs to log/*.log and truncates state.json.tmp. A state
// root another user can write to (a --state-dir under /tmp that someone
// made first, or a symbolic link planted there) would let that user make
// root kill, delete or overwrite anything. So every directory on the way
// to the lab's directory must be one only trusted users can change, as
// OpenSSH's StrictModes asks of a home directory: owned by root, by this
// user or by the user who ran sudo (SUDO_UID, set by whoever could run
// root already), and writable by nobody else unless sticky (/tmp), where
// the next component's owner check holds. A group may write only if it is
// its owner's private group (privateGroup) or root's group 0 with no
// member but root: group 0 is that on a distribution's own accounts, not
// in container images that run their users with gid 0, where a directory
// of mode 775 is as open as one of mode 777.

// trustedUID reports whether a file owned by uid may steer the controller.
func trustedUID(uid uint32) bool {
	if uid == 0 || int(uid) == os.Geteuid() {
		return true
	}
	if s := os.Getenv("SUDO_UID"); s != "" && os.Geteuid() == 0 {
		if u, err := strconv.ParseUint(s, 10, 32); err == nil && uint32(u) == uid {
			return true
		}
	}
	return false
}

// errUntrustedStateDir marks a state directory refused by checkStatePath.
var errUntrustedStateDir = errors.New("state directory is not safe to use")

// checkStatePath checks every component of the absolute path dir: each
// that exists is owned by a trusted user and, if others can write to it,
// sticky. Components that do not exist yet end the walk when missingOK (a
// directory about to be made in a checked parent). A path through
// symbolic links is checked as written and as resolved.
func checkStatePath(dir string, missingOK bool) error {
	if err := walkStatePath(dir, missingOK); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if missingOK && errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("state %s: %w", dir, err)
	}
	if real != dir {
		return walkStatePath(real, missingOK)
	}
	return nil
}

func walkStatePath(dir string, missingOK bool) error {
	p := "/"
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(dir), "/"), "/")
	for i := -1; i < len(parts); i++ {
		if i >= 0 {
			if parts[i] == "" {
				continue
			}
			p = filepath.Join(p, parts[i])
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if missingOK && errors.Is(err, unix.ENOENT) {
				return nil
			}
			return fmt.Errorf("state %s: %w", p, err)
		}
		if !trustedUID(st.Uid) {
			return fmt.Errorf("%w: %s belongs to uid %d, not to root or uid %d: another user could make this controller (as root) kill, delete or overwrite what they choose; use a directory of your own, such as the default %s", errUntrustedStateDir, p, st.Uid, os.Geteuid(), DefaultStateRoot)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			continue // its target is walked by checkStatePath
		}
		if st.Mode&unix.S_ISVTX != 0 {
			continue // sticky: the next component's owner check holds
		}
		switch {
		case st.Mode&0o002 != 0:
			return fmt.Errorf("%w: other users can write to %s (mode %o) and so replace what is in it: `chmod go-w %s`, or use another directory", errUntrustedStateDir, p, st.Mode&0o7777, p)
		case st.Mode&0o020 != 0 && !privateGroup(st.Gid, st.Uid) && !(st.Gid == 0 && privateGroup(0, 0)):
			// Group 0 is checked as any other: where other users are
			// members of root's group (a container image that runs its
			// users with gid 0), they can write.
			return fmt.Errorf("%w: group %d can write to %s (mode %o) and is neither its owner's private group nor root's alone (/etc/passwd or /etc/group give it other members), so they could replace what is in it: `chmod g-w %s`, or use another directory", errUntrustedStateDir, st.Gid, p, st.Mode&0o7777, p)
		}
	}
	return nil
}

// passwdFile and groupFile describe the accounts for privateGroup.
var passwdFile, groupFile = "/etc/passwd", "/etc/group"

// privateGroup reports whether gid is the user private group of uid: its
// primary group, which no other account has as its primary group and
// /etc/group lists no other member of. Where each user has such a group
// (Fedora, RHEL: their umask is 002 then), the directories a user makes
// are group-writable by that group alone, and ~/labs of mode 775 was
// refused as "other users can write to" it. Debian's OpenSSH takes such
// a group as its owner's in StrictModes for the same reason. A group
// the files do not describe (a directory service) is not taken as
// private.
func privateGroup(gid, uid uint32) bool {
	var owner string
	ok := false
	for _, f := range colonFile(passwdFile) { // name:x:uid:gid:...
		if len(f) < 4 || f[3] != strconv.FormatUint(uint64(gid), 10) {
			continue
		}
		if f[2] != strconv.FormatUint(uint64(uid), 10) {
			return false // another account's primary group too
		}
		owner, ok = f[0], true
	}
	if !ok {
		return false
	}
	for _, f := range colonFile(groupFile) { // name:x:gid:member,member
		if len(f) < 4 || f[2] != strconv.FormatUint(uint64(gid), 10) {
			continue
		}
		for _, m := range strings.Split(f[3], ",") {
			if m != "" && m != owner {
				return false
			}
		}
		return true
	}
	return false
}

// colonFile is the lines of an /etc/passwd-like file split at colons,
// nil when it cannot be read.
func colonFile(path string) [][]string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out [][]string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Split(line, ":"))
	}
	return out
}

// checkPrivateDir checks a directory the controller made for itself
// (the lab's directory and its sock/, log/, run/): a real directory, not a
// symbolic link, of this user, that nobody else can write to. One that
// another user made first under a sticky root fails here.
func checkPrivateDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("state %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || !trustedUID(st.Uid) || st.Mode&0o022 != 0 {
		return fmt.Errorf("%w: %s is not a directory that only uid %d can write to (mode %o, uid %d); if another user made it, remove it", errUntrustedStateDir, dir, os.Geteuid(), st.Mode, st.Uid)
	}
	return nil
}
