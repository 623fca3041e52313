package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Where the labs of tests live. Everything the test helpers create for a
// test process (the daemons they build, the copies of lab files, the
// state roots of Start's labs) is under one directory of that process,
// <TMPDIR>/emufabric-test/<pid>-<random>/, whose owner file the process
// holds flock(2)ed while it lives. The kernel drops the lock when the
// process dies, however it dies (a panic in a parallel test, go test
// -timeout, kill -9), with no cleanup run: a later Start that can take
// the lock knows the owner is gone, tears down the labs it left with the
// code `emulab down` runs (Down), and removes the directory. The lock,
// not the pid in the file, decides: a test process in another PID
// namespace that shares /tmp has pids of its own.
//
//	/tmp/emufabric-test/
//	    41234-k3x9q/        one test process
//	        owner           flock(2)ed by it; its pid and command line
//	        bin/            emuswitch, emunic (and emulab), built once
//	        f1/ f3/ ...     lab files of LoadUnique and of Parse'd specs
//	        s2/ s4/ ...     a state root per Start: s2/<lab>/state.json ...
//	                        (f and s share one count: processSubdir)
//	    .new-123456/        a process directory being made (never swept)

// ownerFile is the lock and marker of a test process's directory.
const ownerFile = "owner"

// testRoot is the directory of the test processes' directories: one per
// user, as a directory another user can write to must never be swept by
// root (its state records name processes and namespaces to remove).
func testRoot() string {
	if uid := os.Geteuid(); uid != 0 {
		return filepath.Join(os.TempDir(), "emufabric-test-"+strconv.Itoa(uid))
	}
	return filepath.Join(os.TempDir(), "emufabric-test")
}

// proc is this process's directory under testRoot, made once.
var proc struct {
	once sync.Once
	dir  string
	err  error
	lock *os.File // held open (and locked) until the process exits
	n    atomic.Uint64
}

// processDir returns this process's directory, making it the first time.
func processDir() (string, error) {
	proc.once.Do(func() { proc.dir, proc.lock, proc.err = makeProcessDir() })
	return proc.dir, proc.err
}

// processSubdir makes a new directory, prefix and a number, in this
// process's directory: short names, as socket paths have a length limit.
func processSubdir(prefix string) (string, error) {
	dir, err := processDir()
	if err != nil {
		return "", err
	}
	d := filepath.Join(dir, prefix+strconv.FormatUint(proc.n.Add(1), 10))
	if err := os.Mkdir(d, 0o700); err != nil {
		return "", fmt.Errorf("test directory: %w", err)
	}
	return d, nil
}

// makeProcessDir makes the directory under a temporary name, locks its
// owner file, then renames it: a sweeper never sees it unlocked.
func makeProcessDir() (string, *os.File, error) {
	root := testRoot()
	if err := secureDir(root); err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp(root, ".new-")
	if err != nil {
		return "", nil, fmt.Errorf("test directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(tmp, ownerFile), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err == nil {
		_, err = fmt.Fprintf(f, "pid %d\nstarted %s\ncommand %q\n", os.Getpid(), time.Now().Format(time.RFC3339), os.Args)
	}
	dir := filepath.Join(root, fmt.Sprintf("%d-%s", os.Getpid(), drawSuffix()))
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("test directory under %s: %w", root, err)
	}
	return dir, f, nil
}

// secureDir makes dir, or checks the one that exists: a directory (not a
// symbolic link) of this user that nobody else can write to.
func secureDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("test root: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("test root %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return fmt.Errorf("test root %s is not a directory of uid %d that only it can write to (mode %o, uid %d): remove it, or set TMPDIR elsewhere", dir, os.Geteuid(), st.Mode, st.Uid)
	}
	return nil
}

// sweepOnce makes the first Start of a process sweep the test root.
var sweepOnce sync.Once

// sweepTestRoot removes what dead test processes left under the test
// root: their labs (Down, as `emulab down` does) and their directories.
// say reports each lab removed and each that could not be.
func sweepTestRoot(say func(format string, args ...any)) {
	// Through processDir, not proc.dir: a parallel test may be making
	// this process's directory right now.
	mine, _ := processDir()
	root := testRoot()
	ents, err := os.ReadDir(root)
	if err != nil {
		return // none yet
	}
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || dir == mine {
			continue
		}
		if err := sweepProcessDir(dir, say); err != nil {
			say("%v", err)
		}
	}
}

// sweepProcessDir removes the directory of a test process that is gone
// and the labs it left: nothing when the process still holds the owner
// file's lock, or when there is no owner file (not a test process's
// directory). The owner file goes last, so a sweep that fails half-way
// is finished by the next one.
func sweepProcessDir(dir string, say func(format string, args ...any)) error {
	f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return nil // its process runs (or another sweeper is at it)
	}
	owner := ownerPid(f)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("sweeping %s: %w", dir, err)
	}
	var errs []error
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		stateRoot := filepath.Join(dir, e.Name())
		labs, _ := Labs(stateRoot)
		for _, name := range labs {
			if err := Down(stateRoot, name, DefaultGrace); err != nil {
				errs = append(errs, fmt.Errorf("lab %s of test process %s (gone) is still there: %w; `%s` retries", name, owner, err, downCommand(stateRoot, name)))
				continue
			}
			say("removed lab %s, left by test process %s (gone), from %s", name, owner, stateRoot)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, e := range ents {
		if e.Name() != ownerFile {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("sweeping %s: %w", dir, err)
			}
		}
	}
	if err := os.Remove(filepath.Join(dir, ownerFile)); err != nil {
		return fmt.Errorf("sweeping %s: %w", dir, err)
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("sweeping %s: %w", dir, err)
	}
	return nil
}

// ownerPid is the pid an owner file records, for messages ("?" if none).
func ownerPid(f *os.File) string {
	b := make([]byte, 64)
	n, _ := f.ReadAt(b, 0)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	if pid, ok := strings.CutPrefix(line, "pid "); ok {
		return pid
	}
	return "?"
}
