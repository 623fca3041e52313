#!/usr/bin/python3
"""Build RoCEv2, PFC and PAUSE frames with scapy, for the interop tests.

    scapy_build.py OUT.pcap OUT.json

Writes the frames to a classic pcap (Ethernet link type) and, next to it, a
JSON file that lists, per frame, the values scapy was asked to put on the wire,
keyed by the field paths of `emulab decode`'s JSON (for example "bth.psn").
The Go test decodes the pcap with our decoder and compares.

scapy 2.5.0 (Debian python3-scapy) defines BTH, AETH, the CNP body and the
802.3x/802.1Qbb MAC Control frames. It has no RETH, DETH, AtomicETH,
AtomicAckETH, ImmDt or IETH, so they are declared below as scapy layers from
the IBTA layouts (IBA vol. 1 sec. 9.3). scapy 2.5.0 computes the ICRC for
IPv4 only; for IPv6 this script follows the recipe upstream scapy adopted
later (see roce_icrc.py).
"""
import json
import logging
import os
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scapy.compat import raw  # noqa: E402
from scapy.contrib.mac_control import (MACControlClassBasedFlowControl,  # noqa: E402
                                       MACControlPause)
from scapy.contrib.roce import AETH, BTH, cnp  # noqa: E402
from scapy.fields import BitField, IntField, LongField, XByteField, XIntField, XLongField  # noqa: E402
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.layers.l2 import Dot1Q, Ether  # noqa: E402
from scapy.packet import Packet, Raw  # noqa: E402
from scapy.utils import wrpcap  # noqa: E402

import roce_icrc  # noqa: E402


class RETH(Packet):
    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dmalen", 0)]


class AtomicETH(Packet):
    name = "AtomicETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0),
                   LongField("swap_add", 0), LongField("compare", 0)]


class AtomicAckETH(Packet):
    name = "AtomicAckETH"
    fields_desc = [LongField("orig", 0)]


class ImmDt(Packet):
    name = "ImmDt"
    fields_desc = [XIntField("data", 0)]


class IETH(Packet):
    name = "IETH"
    fields_desc = [XIntField("rkey", 0)]


class DETH(Packet):
    name = "DETH"
    fields_desc = [XIntField("qkey", 0), XByteField("reserved", 0), BitField("srcqp", 0, 24)]


SRC_MAC, DST_MAC = "02:5c:00:00:00:01", "02:5c:00:00:00:02"
V4 = ("198.51.100.1", "198.51.100.2")
V6 = ("2001:db8::1", "2001:db8::2")


def roce(ip6, bth, exts=(), payload=b"", tagged=None, dscp=26, ecn=2, sport=0xC123):
    """Ether [/Dot1Q] / IP|IPv6 / UDP 4791 / BTH / exts / payload / ICRC."""
    eth = Ether(src=SRC_MAC, dst=DST_MAC)
    if tagged is not None:
        eth = eth / Dot1Q(prio=tagged[0], vlan=tagged[1])
    tos = dscp << 2 | ecn
    if ip6:
        l3 = IPv6(src=V6[0], dst=V6[1], tc=tos, fl=0, hlim=64)
    else:
        l3 = IP(src=V4[0], dst=V4[1], tos=tos, ttl=64, flags="DF", id=0)
    pkt = eth / l3 / UDP(sport=sport, dport=4791, chksum=0) / bth
    for e in exts:
        pkt = pkt / e
    if payload:
        pkt = pkt / Raw(payload)
    b = bytearray(raw(pkt))
    if ip6:
        b[-4:] = roce_icrc.icrc_ipv6(Ether(bytes(b)))
    if len(b) < 60:                    # Ethernet minimum, padding after the ICRC
        b += b"\x00" * (60 - len(b))
    return bytes(b)


def bth_expect(b):
    return {"bth.opcode": b.opcode, "bth.se": b.solicited, "bth.m": b.migreq,
            "bth.padcnt": b.padcount, "bth.tver": b.version, "bth.pkey": b.pkey,
            "bth.fecn": b.fecn, "bth.becn": b.becn, "bth.dqpn": b.dqpn,
            "bth.ackreq": b.ackreq, "bth.psn": b.psn}


def fields(pkt, prefix):
    return {"%s.%s" % (prefix, f.name): pkt.getfieldval(f.name)
            for f in pkt.fields_desc if f.name != "reserved"}


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    out_pcap, out_json = sys.argv[1], sys.argv[2]
    frames, meta = [], []

    def add(name, data, expect):
        frames.append(Ether(data))
        meta.append({"name": name, "expect": expect})

    pay13 = bytes(range(13))           # 13 bytes -> PadCnt 3
    for ip6 in (False, True):
        fam = "ipv6" if ip6 else "ipv4"
        ipx = {"%s.dscp" % fam: 26, "%s.ecn" % fam: 2, "udp.dport": 4791, "udp.sport": 0xC123,
               "icrc_ok": True}

        def case(name, bth, exts=(), payload=b"", extra=None, **kw):
            data = roce(ip6, bth, exts, payload, **kw)
            exp = dict(ipx)
            exp.update(bth_expect(bth))
            for e in exts:
                exp.update(fields(e, e.name.lower()))
            exp["payload_len"] = max(0, len(payload) - bth.padcount)
            exp.update(extra or {})
            add("%s %s" % (fam, name), data, exp)

        case("RC SEND ONLY, PadCnt 3", BTH(opcode=0x04, solicited=1, padcount=3, dqpn=0x12, ackreq=1,
                                           psn=0x100), payload=pay13 + b"\x00" * 3)
        case("RC SEND FIRST", BTH(opcode=0x00, dqpn=0x12, psn=0xFFFFFF), payload=bytes(range(64)))
        case("RC SEND ONLY with Immediate", BTH(opcode=0x05, dqpn=0x12, psn=7),
             [ImmDt(data=0xDEADBEEF)], payload=b"abcd")
        case("RC SEND ONLY with Invalidate", BTH(opcode=0x17, dqpn=0x12, psn=8),
             [IETH(rkey=0x1234)], payload=b"wxyz")
        case("RC RDMA WRITE FIRST", BTH(opcode=0x06, dqpn=0x34, psn=9, migreq=1),
             [RETH(va=0x00007F0012345000, rkey=0xA5A5, dmalen=8192)], payload=bytes(256))
        case("RC RDMA WRITE ONLY with Immediate", BTH(opcode=0x0B, dqpn=0x34, psn=10, ackreq=1),
             [RETH(va=0xFFFFFFFFFFFFF000, rkey=0x1, dmalen=4), ImmDt(data=1)], payload=b"1234")
        case("RC RDMA READ REQUEST", BTH(opcode=0x0C, dqpn=0x34, psn=11, ackreq=1),
             [RETH(va=0x1000, rkey=0x77, dmalen=65536)])
        case("RC RDMA READ RESPONSE ONLY", BTH(opcode=0x10, dqpn=0x35, psn=11, pkey=0x8001),
             [AETH(syndrome=0x1F, msn=3)], payload=bytes(range(32)),
             extra={"aeth.type": "ack", "aeth.credit_code": 0x1F})
        for syn, kind in ((0x00, "ack"), (0x0E, "ack"), (0x21, "rnr_nak"), (0x3F, "rnr_nak"),
                          (0x60, "nak"), (0x63, "nak")):
            case("RC ACKNOWLEDGE syndrome 0x%02x" % syn, BTH(opcode=0x11, dqpn=0x35, psn=12),
                 [AETH(syndrome=syn, msn=0xABCDEF)], extra={"aeth.type": kind})
        case("RC ATOMIC ACKNOWLEDGE", BTH(opcode=0x12, dqpn=0x35, psn=13),
             [AETH(syndrome=0x00, msn=5), AtomicAckETH(orig=0x0123456789ABCDEF)])
        case("RC CmpSwap", BTH(opcode=0x13, dqpn=0x34, psn=14, ackreq=1),
             [AtomicETH(va=0x2000, rkey=0x99, swap_add=0xFFFFFFFFFFFFFFFF, compare=42)])
        case("RC FetchAdd", BTH(opcode=0x14, dqpn=0x34, psn=15, ackreq=1),
             [AtomicETH(va=0x2008, rkey=0x99, swap_add=1, compare=0)])
        case("UC SEND ONLY", BTH(opcode=0x24, dqpn=0x56, psn=16), payload=b"uc!!")
        # Not from or to QP1: Wireshark parses such a UD payload as a MAD.
        case("UD SEND ONLY", BTH(opcode=0x64, dqpn=0x77, psn=17),
             [DETH(qkey=0x11111111, srcqp=0x99)], payload=bytes(256))
        case("UD SEND ONLY with Immediate", BTH(opcode=0x65, dqpn=0x78, psn=18),
             [DETH(qkey=0x11111111, srcqp=0xABCDEF), ImmDt(data=0xCAFEF00D)], payload=b"ud..")
        case("RC SEND ONLY empty, Ethernet padding", BTH(opcode=0x04, dqpn=0x12, psn=19))
        case("RC SEND ONLY, FECN", BTH(opcode=0x04, dqpn=0x12, psn=20, fecn=1), payload=b"fecn")
        case("RC SEND ONLY, VLAN PCP 3, ECN CE", BTH(opcode=0x04, dqpn=0x12, psn=21), payload=b"vlan",
             tagged=(3, 100), ecn=3,
             extra={"vlan.pcp": 3, "vlan.vid": 100, "%s.ecn" % fam: 3})
        data = roce(ip6, cnp(0xD2), dscp=48, ecn=0, tagged=(6, 100))
        exp = {"bth.opcode": 0x81, "bth.becn": 1, "bth.dqpn": 0xD2, "bth.psn": 0, "bth.ackreq": 0,
               "%s.dscp" % fam: 48, "%s.ecn" % fam: 0, "vlan.pcp": 6, "icrc_ok": True}
        add("%s CNP" % fam, data, exp)

    src = SRC_MAC
    pfc = Ether(src=src, dst="01:80:c2:00:00:01") / MACControlClassBasedFlowControl(
        c3_enabled=1, c3_pause_time=0xFFFF, c6_enabled=1, c6_pause_time=0x1234)
    add("PFC XOFF priorities 3 and 6", raw(pfc),
        {"eth.ethertype": 0x8808, "pfc.enable": 0x48, "pfc.time": [0, 0, 0, 0xFFFF, 0, 0, 0x1234, 0]})
    xon = Ether(src=src, dst="01:80:c2:00:00:01") / MACControlClassBasedFlowControl(c3_enabled=1)
    add("PFC XON priority 3", raw(xon),
        {"eth.ethertype": 0x8808, "pfc.enable": 0x08, "pfc.time": [0] * 8})
    pause = Ether(src=src, dst="01:80:c2:00:00:01") / MACControlPause(pause_time=0x2000)
    add("802.3x PAUSE", raw(pause), {"eth.ethertype": 0x8808, "pause.quanta": 0x2000})

    for f in frames:
        if len(raw(f)) < 60:
            raise SystemExit("scapy_build: frame shorter than 60 bytes: %r" % f.summary())
    wrpcap(out_pcap, frames)
    with open(out_json, "w") as fh:
        json.dump({"frames": meta}, fh, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
