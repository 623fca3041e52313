package lab

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state root others can write to is refused: its state.json would tell
// root what to kill and delete.
func TestOpenStateRefusesWorldWritableRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenState(root, "lab1"); !errors.Is(err, errUntrustedStateDir) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("OpenState in a world-writable root: %v, want %v", err, errUntrustedStateDir)
	}
	// Sticky, as /tmp is: the lab's own directory is checked instead.
	if err := os.Chmod(root, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	s, err := OpenState(root, "lab1")
	if err != nil {
		t.Fatalf("OpenState in a sticky root: %v", err)
	}
	s.Close()
}

// The attack: another user makes the state directory of a lab first (a
// --state-dir under /tmp) with a state.json naming a file of root's as a
// socket of the lab. `emulab down` as root must not remove it.
func TestTeardownRefusesAnotherUsersStateDir(t *testing.T) {
	SkipUnlessRoot(t)
	const nobody = 65534
	tmp := t.TempDir()
	victim := filepath.Join(tmp, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		plant func(root, labDir string) error
	}{
		{"root of another user", func(root, labDir string) error {
			return chownAll(nobody, root, labDir)
		}},
		{"lab directory of another user in a sticky root", func(root, labDir string) error {
			if err := os.Chmod(root, os.ModeSticky|0o777); err != nil {
				return err
			}
			return chownAll(nobody, labDir)
		}},
		{"symbolic link of another user", func(root, labDir string) error {
			real := root + "-real"
			if err := os.Rename(root, real); err != nil {
				return err
			}
			if err := os.Symlink(real, root); err != nil {
				return err
			}
			return os.Lchown(root, nobody, nobody)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "state")
			labDir := filepath.Join(root, "sxevil")
			if err := os.MkdirAll(labDir, 0o700); err != nil {
				t.Fatal(err)
			}
			rec := `{"lab":"sxevil","namespaces":[],"procs":[],"sockets":["` + victim + `"]}`
			if err := os.WriteFile(filepath.Join(labDir, "state.json"), []byte(rec), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := c.plant(root, labDir); err != nil {
				t.Fatal(err)
			}
			err := Teardown(root, "sxevil", 0)
			if !errors.Is(err, errUntrustedStateDir) {
				t.Errorf("Teardown: %v, want %v", err, errUntrustedStateDir)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Fatalf("Teardown removed a file the record named: %v", err)
			}
		})
	}
}

// A record that names a socket outside the lab's sock/ (written by hand,
// or by an older up) never makes Teardown remove that file.
func TestTeardownRemovesOnlyItsOwnSockets(t *testing.T) {
	root := t.TempDir()
	other := filepath.Join(t.TempDir(), "not-a-socket")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenState(root, "lab1")
	if err != nil {
		t.Fatal(err)
	}
	own, err := s.SocketPath("link0")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.rec.Sockets = append(s.rec.Sockets, other, filepath.Join(s.Dir, "sock", "..", "..", "x"))
	s.mu.Unlock()
	if err := s.Teardown(0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(other); err != nil {
		t.Errorf("Teardown removed %s, which is not the lab's: %v", other, err)
	}
	if _, err := os.Stat(own); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lab's own socket file %s is still there: %v", own, err)
	}
}

func chownAll(uid int, paths ...string) error {
	for _, p := range paths {
		if err := os.Chown(p, uid, uid); err != nil {
			return err
		}
	}
	return nil
}

// A directory group-writable by its owner's private group (what mkdir
// makes under Fedora's umask 002) is the owner's alone: taken as the
// state root of a sudo user. A group another account has as its primary
// group or lists as a member, or one /etc/group does not describe, is
// still refused.
func TestStateRootInAPrivateGroupDir(t *testing.T) {
	SkipUnlessRoot(t)
	const alice = 4242
	t.Setenv("SUDO_UID", "4242")
	etc := t.TempDir()
	passwd, group := filepath.Join(etc, "passwd"), filepath.Join(etc, "group")
	defer func(p, g string) { passwdFile, groupFile = p, g }(passwdFile, groupFile)
	passwdFile, groupFile = passwd, group
	root := filepath.Join(t.TempDir(), "labs")
	if err := os.Mkdir(root, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, alice, alice); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, passwd, group string
		ok                  bool
	}{
		{"private group", "root:x:0:0::/root:/bin/sh\nalice:x:4242:4242::/home/alice:/bin/sh\n", "root:x:0:\nalice:x:4242:\n", true},
		{"owner listed as its member", "alice:x:4242:4242::/home/alice:/bin/sh\n", "alice:x:4242:alice\n", true},
		{"another member", "alice:x:4242:4242::/home/alice:/bin/sh\n", "alice:x:4242:bob\n", false},
		{"another account's primary group", "alice:x:4242:4242::/home/alice:/bin/sh\nbob:x:4243:4242::/home/bob:/bin/sh\n", "alice:x:4242:\n", false},
		{"group not described", "alice:x:4242:4242::/home/alice:/bin/sh\n", "root:x:0:\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(passwd, []byte(c.passwd), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(group, []byte(c.group), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := OpenState(root, "lab1")
			if s != nil {
				s.Close()
			}
			if c.ok && err != nil {
				t.Errorf("OpenState: %v", err)
			}
			if !c.ok && !errors.Is(err, errUntrustedStateDir) {
				t.Errorf("OpenState: %v, want %v", err, errUntrustedStateDir)
			}
		})
	}
}

// A directory group 0 can write to is safe only while group 0 is root's
// alone: a container image that runs its users with gid 0 (as a primary
// group, or listed in /etc/group) lets them write to it as to a
// directory of mode 777.
func TestStateRootGroupZeroWritable(t *testing.T) {
	SkipUnlessRoot(t)
	etc := t.TempDir()
	passwd, group := filepath.Join(etc, "passwd"), filepath.Join(etc, "group")
	defer func(p, g string) { passwdFile, groupFile = p, g }(passwdFile, groupFile)
	passwdFile, groupFile = passwd, group
	const rootOnly = "root:x:0:0::/root:/bin/sh\nalice:x:4242:4242::/home/alice:/bin/sh\n"
	for _, c := range []struct {
		name, passwd, group string
		owner               int // the directory's uid (its gid is 0)
		ok                  bool
	}{
		{"root's alone", rootOnly, "root:x:0:\nalice:x:4242:\n", 0, true},
		{"root listed as its member", rootOnly, "root:x:0:root\n", 0, true},
		{"of a sudo user's directory, root's alone", rootOnly, "root:x:0:\nalice:x:4242:\n", 4242, true},
		{"a member", rootOnly, "root:x:0:alice\nalice:x:4242:\n", 0, false},
		{"a user's primary group", rootOnly + "app:x:1000:0::/app:/bin/sh\n", "root:x:0:\n", 0, false},
		{"a member, of a sudo user's directory", rootOnly, "root:x:0:alice\nalice:x:4242:\n", 4242, false},
		{"not described", rootOnly, "alice:x:4242:\n", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("SUDO_UID", "4242")
			if err := os.WriteFile(passwd, []byte(c.passwd), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(group, []byte(c.group), 0o644); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(t.TempDir(), "labs")
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(root, 0o775); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(root, c.owner, 0); err != nil {
				t.Fatal(err)
			}
			s, err := OpenState(root, "lab1")
			if s != nil {
				s.Close()
			}
			if c.ok && err != nil {
				t.Errorf("OpenState: %v", err)
			}
			if !c.ok && (!errors.Is(err, errUntrustedStateDir) || !strings.Contains(err.Error(), "group 0 can write to "+root)) {
				t.Errorf("OpenState: %v, want %v naming group 0", err, errUntrustedStateDir)
			}
		})
	}
}
