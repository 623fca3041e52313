package lab

import "path/filepath"

// StatusCommand is the emulab command that shows lab name's daemons
// under the state root, for hints: with the state directory when it is
// not the default, as downCommand. An empty name shows every lab.
func StatusCommand(root, name string) string { return labCommand(root, "status", name) }

// labCommand is `emulab VERB [--state-dir ROOT] NAME`: a hint must give
// back the --state-dir the user gave, or the command it suggests looks
// under the default root and finds no such lab.
func labCommand(root, verb, name string) string {
	cmd := "emulab " + verb
	if root != "" && filepath.Clean(root) != DefaultStateRoot {
		cmd += " --state-dir " + root
	}
	if name != "" {
		cmd += " " + name
	}
	return cmd
}

// socketLab returns the state root and lab of a daemon's control socket
// where up puts it (ROOT/LAB/sock/NODE.sock, up_linux.go); ok is false
// for a socket elsewhere.
func socketLab(path string) (root, name string, ok bool) {
	sock := filepath.Dir(path)
	if filepath.Base(sock) != "sock" {
		return "", "", false
	}
	dir := filepath.Dir(sock)
	return filepath.Dir(dir), filepath.Base(dir), true
}

// socketStatusCommand is the status command of the lab whose daemon has
// the control socket path, or plain `emulab status` for a socket that is
// not where up puts them.
func socketStatusCommand(path string) string {
	if root, name, ok := socketLab(path); ok {
		return StatusCommand(root, name)
	}
	return "emulab status"
}

// LinkSetCommand is `emulab link set [--state-dir ROOT] ENDPOINT CHANGE`,
// for hints that send the user to the other end of a link; endpoint names
// its lab (LAB/NODE:PORT), so with the state root the command finds the
// lab whatever else is up.
func LinkSetCommand(root, endpoint, change string) string {
	return labCommand(root, "link set", endpoint+" "+change)
}
