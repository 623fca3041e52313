"""ICRC of RoCEv2 packets with scapy, shared by the interop scripts.

IPv4: scapy's own code, BTH.compute_icrc (scapy.contrib.roce).
IPv6: scapy 2.5.0 cannot (it warns and returns zero), so this follows the
recipe upstream scapy adopted later for IPv6, on scapy 2.5.0's layers: a
pseudo-LRH of eight 0xFF bytes, then the IPv6 header with Traffic Class, Flow
Label and Hop Limit set to ones, the UDP checksum set to ones, BTH byte 4
(FECN, BECN, reserved) set to ones, and the rest as on the wire; CRC-32
(zlib), stored least-significant byte first.

Both take a packet that ends with the ICRC: no Ethernet padding after it.
scapy 2.5.0's compute_icrc would fold such padding into the CRC.
"""
import struct
import zlib

from scapy.compat import raw
from scapy.contrib.roce import BTH
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Raw


def icrc_ipv4(pkt):
    """The 4 ICRC bytes, in wire order, by scapy's BTH.compute_icrc."""
    return pkt[BTH].compute_icrc(None)


def icrc_ipv6(pkt):
    """The 4 ICRC bytes, in wire order, by the upstream IPv6 recipe."""
    ps = Raw(b"\xff" * 8) / pkt[IPv6].copy()
    ps[IPv6].tc, ps[IPv6].fl, ps[IPv6].hlim = 0xFF, 0xFFFFF, 0xFF
    ps[UDP].chksum = 0xFFFF
    b = ps[BTH]
    b.fecn, b.becn, b.resv6 = 1, 1, 0x3F
    # self_build leaves the ICRC (an FCSField) out; the BTH's payload holds
    # the extension headers and the data. Four placeholder bytes keep the
    # IPv6 and UDP lengths as on the wire; they are cut before the CRC.
    ps[UDP].payload = Raw(b.self_build() + raw(b.payload) + b"\xff" * 4)
    return struct.pack("<I", zlib.crc32(raw(ps)[:-4]) & 0xFFFFFFFF)
