package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// DefaultStateRoot holds one directory per running lab.
const DefaultStateRoot = "/run/emufabric"

// State is a lab's state directory, <root>/<lab>/: what `up` created, so
// that `down` removes everything even after kill -9 of the controller or
// of any daemon. It holds
//
//	state.json   namespaces, processes (pid + start time), socket files
//	lock         flock(2)'d by the controller that owns the lab
//	sock/        the unix sockets of links and control channels
//	log/         one log file per daemon
//	run/         one pidfile per daemon
//
// Records are written ahead: a namespace or socket is recorded before it is
// created, so a crash between the two leaves a record of something that
// may not exist (Teardown tolerates that), never the reverse. A process is
// recorded right after it started; one that was started but not recorded
// is still found, because every daemon runs inside a recorded namespace
// and Teardown kills every process in those namespaces.
type State struct {
	Root string
	Lab  string
	Dir  string

	mu   sync.Mutex
	rec  nsRecord
	lock *os.File
}

// nsRecord is state.json.
type nsRecord struct {
	Lab        string        `json:"lab"`
	Namespaces []string      `json:"namespaces"`
	Procs      []nsProcEntry `json:"procs"`
	Sockets    []string      `json:"sockets"`
}

// nsProcEntry identifies a process across pid reuse: the pid plus its
// start time in clock ticks since boot (field 22 of /proc/<pid>/stat).
type nsProcEntry struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Pid       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
}

// ErrLabLocked means another controller holds the lab.
var ErrLabLocked = errors.New("lab is locked by another controller")

// OpenState creates or opens the state directory of lab under root
// ("" is DefaultStateRoot) and locks it; Close unlocks. An existing
// ErrStateCorrupt is a state.json that does not decode: Teardown recovers
// what it can from the rest of the state directory (recoverLeftovers).
var ErrStateCorrupt = errors.New("the lab's state record is damaged")

// state.json (a lab that was not torn down) is loaded.
func OpenState(root, lab string) (*State, error) {
	// Absolute: the daemons' arguments and the namespaces' owner marks
	// name it, and are read from other working directories.
	root = absRoot(root)
	if err := checkName(lab); err != nil {
		return nil, fmt.Errorf("lab name: %w", err)
	}
	dir := filepath.Join(root, lab)
	// The root is checked before anything is made in it and again after
	// (a name another user raced to take in a sticky root); the lab's
	// directories are this controller's own (ns_statedir.go).
	if err := checkStatePath(root, true); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if err := checkStatePath(root, false); err != nil {
		return nil, err
	}
	for _, d := range []string{dir, filepath.Join(dir, "sock"), filepath.Join(dir, "log"), filepath.Join(dir, "run")} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("state: %w", err)
		}
		if err := checkPrivateDir(d); err != nil {
			return nil, err
		}
	}
	lf, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	// The kernel drops a flock when its holder dies, so a kill -9'd
	// controller never leaves the lab locked.
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lf.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("state %s: %w", dir, ErrLabLocked)
		}
		return nil, fmt.Errorf("state %s: lock: %w", dir, err)
	}
	s := &State{Root: root, Lab: lab, Dir: dir, lock: lf, rec: nsRecord{Lab: lab}}
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &s.rec); err != nil {
			s.Close()
			return nil, fmt.Errorf("state %s: state.json: %w (%w: `%s` removes what the lab left behind)", dir, err, ErrStateCorrupt, downCommand(root, lab))
		}
	case !errors.Is(err, os.ErrNotExist):
		s.Close()
		return nil, fmt.Errorf("state: %w", err)
	}
	return s, nil
}

// Close unlocks the state; the directory stays.
func (s *State) Close() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close()
	s.lock = nil
	return err
}

// save writes state.json atomically (write a temporary file, fsync,
// rename), so a crash never leaves a half-written record.
func (s *State) save() error {
	b, err := json.MarshalIndent(&s.rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Dir, "state.json.tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("state: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.Dir, "state.json")); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// RecordNamespace records a namespace before it is created.
func (s *State) RecordNamespace(name string) error {
	if err := nsCheckFileName(name); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.rec.Namespaces, name) {
		return nil
	}
	s.rec.Namespaces = append(s.rec.Namespaces, name)
	return s.save()
}

// SocketPath returns the path of the socket file called name in the state
// directory and records it (before the socket exists). Paths stay well
// under the 108-byte sun_path limit: the root, a 15-byte lab name, "sock/"
// and a checked name.
func (s *State) SocketPath(name string) (string, error) {
	if err := nsCheckFileName(name); err != nil {
		return "", fmt.Errorf("socket: %w", err)
	}
	p := filepath.Join(s.Dir, "sock", name+".sock")
	if len(p) >= len(unix.RawSockaddrUnix{}.Path) {
		return "", fmt.Errorf("socket path %s is longer than %d bytes", p, len(unix.RawSockaddrUnix{}.Path)-1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.rec.Sockets, p) {
		s.rec.Sockets = append(s.rec.Sockets, p)
		if err := s.save(); err != nil {
			return "", err
		}
	}
	return p, nil
}

// LogPath is the log file of the process called name.
func (s *State) LogPath(name string) (string, error) {
	if err := nsCheckFileName(name); err != nil {
		return "", fmt.Errorf("log: %w", err)
	}
	return filepath.Join(s.Dir, "log", name+".log"), nil
}

// PidPath is the pidfile of the process called name.
func (s *State) PidPath(name string) (string, error) {
	if err := nsCheckFileName(name); err != nil {
		return "", fmt.Errorf("pidfile: %w", err)
	}
	return filepath.Join(s.Dir, "run", name+".pid"), nil
}

// recordProc records a started process.
func (s *State) recordProc(e nsProcEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Procs = slices.DeleteFunc(s.rec.Procs, func(p nsProcEntry) bool { return p.Name == e.Name })
	s.rec.Procs = append(s.rec.Procs, e)
	return s.save()
}

// forgetProc removes a process that was stopped and reaped.
func (s *State) forgetProc(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Procs = slices.DeleteFunc(s.rec.Procs, func(p nsProcEntry) bool { return p.Name == name })
	return s.save()
}

// Namespaces lists the recorded namespaces.
func (s *State) Namespaces() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rec.Namespaces)
}

// Sockets lists the recorded socket files.
func (s *State) Sockets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rec.Sockets)
}

// ProcPids lists the recorded processes' pids by name.
func (s *State) ProcPids() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.rec.Procs))
	for _, p := range s.rec.Procs {
		m[p.Name] = p.Pid
	}
	return m
}
