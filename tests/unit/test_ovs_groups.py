"""Unit tests for controller/ovs_groups.py (no root, no OVS needed)."""
import struct

import pytest

# Let plain `pytest` find the `controller` package (drop once pytest's
# pythonpath is configured for the repo root).
from os_ken.ofproto import ofproto_parser
from os_ken.ofproto import ofproto_v1_5 as ofp
from os_ken.ofproto import ofproto_v1_5_parser as parser

from controller import ovs_groups

FIVE_TUPLE = ['ip_src', 'ip_dst', 'nw_proto', 'tcp_src', 'tcp_dst']

# Derived by hand from OVS's struct ntr_group_prop_selection_method.
EXPECTED_5TUPLE_BASIS7 = (
    b'\xff\xff\x00\x49'                  # OFPGPT_EXPERIMENTER, length 73
    + b'\x00\x00\x15\x4d'                # NTR_VENDOR_ID
    + b'\x00\x00\x00\x01'                # NTRT_SELECTION_METHOD
    + b'\x00' * 4                        # pad
    + b'hash' + b'\x00' * 12             # selection_method[16]
    + b'\x00' * 7 + b'\x07'              # selection_method_param = basis
    + b'\x80\x00\x16\x04' + b'\xff' * 4  # OXM ipv4_src (field 11), all-ones
    + b'\x80\x00\x18\x04' + b'\xff' * 4  # ipv4_dst (12)
    + b'\x80\x00\x14\x01' + b'\xff'      # ip_proto (10)
    + b'\x80\x00\x1a\x02' + b'\xff' * 2  # tcp_src (13)
    + b'\x80\x00\x1c\x02' + b'\xff' * 2  # tcp_dst (14)
    + b'\x00' * 7                        # pad 73 -> 80
)

# OFPMP_GROUP_DESC reply captured from OVS 3.1 (two select groups with
# watch_port buckets and hash selection methods).
OVS_GROUP_DESC_REPLY = bytes.fromhex(
    '061301307c78cf51000700000000000000b00100000000010050000000000000'
    '00280010000000000000001000000002ffe50000000000000000000800010000'
    '000100080000000200280010000000010000001000000003ffe5000000000000'
    '00000008000100000001000800000003ffff00490000154d0000000100000000'
    '68617368000000000000000000000000000000000000000780001604ffffffff'
    '80001804ffffffff80001401ff80001a02ffff80001c02ffff00000000000000'
    '0070010000000002002800000000000000280010000000000000001000000003'
    '000000000000000000000008000100000001000800000003ffff00360000154d'
    '0000000100000000686173680000000000000000000000000000000000000003'
    '80001604ffffffff80001c02ffff0000')


class _DP:
    ofproto = ofp
    ofproto_parser = parser


def _parse(buf):
    version, msg_type, msg_len, xid = ofproto_parser.header(buf)
    return parser.msg_parser(_DP, version, msg_type, msg_len, xid, buf)


def test_hash_property_bytes():
    prop = ovs_groups.hash_selection_property(FIVE_TUPLE, 7)
    assert bytes(prop.serialize()) == EXPECTED_5TUPLE_BASIS7


def test_udp_and_oxm_names():
    buf = bytes(ovs_groups.hash_selection_property(['ipv4_src', 'udp_src',
                                               'udp_dst'], 0).serialize())
    assert buf[2:4] == struct.pack('!H', 40 + 8 + 6 + 6)
    assert buf[40:] == bytes.fromhex('80001604ffffffff80001e02ffff'
                                     '80002002ffff00000000')


def test_unknown_field_rejected():
    with pytest.raises(ValueError):
        ovs_groups.hash_selection_property(['no_such_field'], 0).serialize()


def test_property_inside_group_mod():
    bucket = parser.OFPBucket(0, [parser.OFPActionOutput(2)])
    mod = parser.OFPGroupMod(_DP, ofp.OFPGC_ADD, ofp.OFPGT_SELECT, 1,
                             buckets=[bucket],
                             properties=[ovs_groups.hash_selection_property(
                                 FIVE_TUPLE, 7)])
    mod.serialize()
    assert bytes(mod.buf).endswith(EXPECTED_5TUPLE_BASIS7)
    assert struct.unpack_from('!H', mod.buf, 2)[0] == len(mod.buf)


def _group_desc_entry(group_id, buckets, props):
    body = bytearray()
    for b in buckets:
        b.serialize(body, len(body))
    bucket_len = len(body)
    for p in props:
        body += p.serialize()
    return struct.pack(ofp.OFP_GROUP_DESC_STATS_PACK_STR, 16 + len(body),
                       ofp.OFPGT_SELECT, group_id, bucket_len) + body


def _buckets(ports):
    return [parser.OFPBucket(i, [parser.OFPActionOutput(port)], [
        parser.OFPGroupBucketPropWatch(ofp.OFPGBPT_WATCH_PORT, watch=port)])
        for i, port in enumerate(ports)]


def test_parser_fix_round_trips_group_desc_reply():
    ovs_groups.apply_parser_fixes()
    body = (_group_desc_entry(1, _buckets([2, 3]),
                              [ovs_groups.hash_selection_property(FIVE_TUPLE, 7)]) +
            _group_desc_entry(2, _buckets([4]),
                              [ovs_groups.hash_selection_property(['ip_src'], 9)]))
    buf = struct.pack('!BBHIHH4x', ofp.OFP_VERSION, ofp.OFPT_MULTIPART_REPLY,
                      16 + len(body), 5, ofp.OFPMP_GROUP_DESC, 0) + body
    g1, g2 = _parse(buf).body
    assert (g1.group_id, g2.group_id) == (1, 2)
    assert [b.properties[0].watch for b in g1.buckets] == [2, 3]
    assert [b.actions[0].port for b in g2.buckets] == [4]
    p1, = g1.properties
    assert (p1.method, p1.param, p1.fields) == (
        'hash', 7, ['ipv4_src', 'ipv4_dst', 'ip_proto', 'tcp_src', 'tcp_dst'])
    assert bytes(p1.serialize()) == EXPECTED_5TUPLE_BASIS7
    p2, = g2.properties
    assert (p2.param, p2.fields) == (9, ['ipv4_src'])


def test_parser_fix_reads_real_ovs_reply():
    ovs_groups.apply_parser_fixes()
    g1, g2 = _parse(OVS_GROUP_DESC_REPLY).body
    assert [len(g.buckets) for g in (g1, g2)] == [2, 1]
    assert [p.watch for p in g1.buckets[1].properties
            if p.type == ofp.OFPGBPT_WATCH_PORT] == [3]
    assert (g1.properties[0].param, g2.properties[0].param) == (7, 3)
    assert g2.properties[0].fields == ['ipv4_src', 'tcp_dst']


def test_apply_parser_fixes_idempotent():
    ovs_groups.apply_parser_fixes()
    first = (parser.OFPBucket.parser.__func__,
             parser.OFPGroupDescStats.parser.__func__)
    ovs_groups.apply_parser_fixes()
    assert first == (parser.OFPBucket.parser.__func__,
                     parser.OFPGroupDescStats.parser.__func__)
