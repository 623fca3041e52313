#!/usr/bin/python3
"""Recompute the ICRC of every RoCEv2 frame of a pcap with scapy.

    scapy_icrc.py FILE.pcap

Prints a JSON list with one object per frame: {"frame": N, "icrc": "hex of
the 4 wire bytes" or null when the frame is not RoCEv2, "method": "scapy"
(scapy's BTH.compute_icrc, IPv4) or "upstream-ipv6-recipe" (IPv6, see
roce_icrc.py)}.
"""
import json
import logging
import os
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scapy.compat import raw  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402
from scapy.utils import rdpcap  # noqa: E402

import roce_icrc  # noqa: E402


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = []
    for n, p in enumerate(rdpcap(sys.argv[1]), 1):
        r = {"frame": n, "icrc": None, "method": None}
        out.append(r)
        if UDP not in p or p[UDP].dport != 4791 or BTH not in p:
            continue
        whole = raw(p)
        if IP in p:
            end = len(whole) - len(raw(p[IP])) + p[IP].len
        else:
            end = len(whole) - len(raw(p[IPv6])) + 40 + p[IPv6].plen
        q = Ether(whole[:end])      # the frame without Ethernet padding
        if IP in q:
            r["icrc"], r["method"] = roce_icrc.icrc_ipv4(q).hex(), "scapy"
        else:
            r["icrc"], r["method"] = roce_icrc.icrc_ipv6(q).hex(), "upstream-ipv6-recipe"
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
