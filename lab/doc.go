// Package lab is a fabric's lab file and the real lab built from it.
//
// # Lab files
//
// Parse decodes and validates a lab file held in memory, Load one on disk:
// a containerlab-shaped YAML document that describes a fabric (nodes,
// links, switch QoS with SONiC names, InfiniBand settings), the traffic to
// run on it and how long to simulate it (docs/lab-file.md). The result, a
// Spec, is typed, in base units and with every default filled in; an
// invalid file is an ErrorList whose entries name the file, the line and
// the field. The same Spec drives the deterministic simulator (package sim,
// `emulab sim`) and a real lab.
//
// # Real labs
//
// Up builds a Spec as a lab in network namespaces (Linux, root): a
// namespace emu-<lab>-<node> per node, an emuswitch daemon per switch and
// an emunic per NIC host (or a plain TAP port, HostsTAP), links over unix
// sockets, the hosts' addresses, MTUs, neighbours and routes. What it
// creates is recorded in a state directory (State) under a state root, a
// namespace before it exists, so Down (and Lab.Down) removes all of it from
// the record, also after kill -9 of a daemon or of the controller. `emulab up` and `emulab
// down` are these two functions.
//
// # Tests
//
// Start brings a lab up for a Go test and takes it down when the test
// ends; LoadUnique and Unique give each test's lab a name of its own, as
// namespaces are global; Lab.Exec, Lab.ExecContext and Lab.StartCmd run
// commands in a node's namespace; Lab.Health reports daemons that died.
// docs/testing.md is the guide: writing such a test, driving the emulated
// RNICs from it (package nicd), and removing a lab a dead test left.
package lab
