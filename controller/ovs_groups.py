"""Open vSwitch's select-group hashing for os-ken: the property that makes a select group hash
the fields we name (the ECMP groups of controller/switch.py), and the os-ken parser fixes that
let it read OVS's group replies back (OpenFlow 1.5).

* ``hash_selection_property()`` builds OVS's select-group "selection method"
  property (a Netronome experimenter group property), which os-ken's generic
  ``OFPGroupPropExperimenter`` cannot encode.  Layout (OVS
  include/openflow/netronome-ext.h, struct ntr_group_prop_selection_method)::

      u16 type = 0xFFFF (OFPGPT_EXPERIMENTER)
      u16 length            (excludes the trailing padding)
      u32 experimenter = 0x0000154D (NTR_VENDOR_ID)
      u32 exp_type = 1      (NTRT_SELECTION_METHOD)
      u32 pad
      char method[16]       ("hash" or "dp_hash", NUL padded)
      u64 method_param      (hash basis)
      OXM TLVs: header with has_mask=0 whose *value* is an all-ones mask
      zero padding to a multiple of 8

* ``apply_parser_fixes()`` fixes os-ken's OF1.5 bucket / group-desc parsers and
  teaches os-ken to parse the property above in replies from OVS. Process-wide: the launcher
  (controller/launcher.py) applies it once, before any app starts.

Only honoured by OVS over OpenFlow 1.5; over 1.3 OVS drops it silently.
"""
import struct

from os_ken.ofproto import ofproto_v1_5 as ofp
from os_ken.ofproto import ofproto_v1_5_parser as parser

NTR_VENDOR_ID = 0x0000154D
NTRT_SELECTION_METHOD = 1

_BODY_FMT = '!II4x16sQ'   # experimenter, exp_type, pad, method, param
_BODY_LEN = struct.calcsize(_BODY_FMT)   # 36 (+4 header = OVS's 40)

# OVS field names -> os-ken OXM names.
_ALIASES = {'ip_src': 'ipv4_src', 'ip_dst': 'ipv4_dst', 'nw_src': 'ipv4_src',
            'nw_dst': 'ipv4_dst', 'nw_proto': 'ip_proto',
            'dl_src': 'eth_src', 'dl_dst': 'eth_dst', 'dl_type': 'eth_type'}


def _oxm_header(name):
    """OXM header (has_mask=0, length = field size) of a basic field."""
    name = _ALIASES.get(name, name)
    try:
        return getattr(ofp, 'OXM_OF_' + name.upper())
    except AttributeError:
        raise ValueError(f'unknown OXM field {name!r}') from None


def _oxm_name(header):
    """Field name for a 32-bit OXM header (class << 16 | field << 9 | ...)."""
    for f in ofp.oxm_types:
        if f.num == header >> 9:
            return f.name
    return hex(header)


class NTRSelectionMethod(parser.OFPGroupProp):
    """OVS select-group selection method, for OFPGroupMod(properties=[...])."""

    def __init__(self, method='hash', param=0, fields=(),
                 type_=ofp.OFPGPT_EXPERIMENTER, length=None,
                 experimenter=NTR_VENDOR_ID, exp_type=NTRT_SELECTION_METHOD):
        super().__init__(type_, length)
        if len(method.encode()) >= 16:
            raise ValueError(f'method name too long: {method!r}')
        self.experimenter = experimenter
        self.exp_type = exp_type
        self.method = method
        self.param = param
        self.fields = list(fields)

    def serialize_body(self):
        # OFPPropBase.serialize() adds type/length and pads to 8 bytes.
        body = bytearray(struct.pack(_BODY_FMT, self.experimenter,
                                     self.exp_type, self.method.encode(),
                                     self.param))
        for name in self.fields:
            header = _oxm_header(name)
            body += struct.pack('!I', header) + b'\xff' * (header & 0xff)
        return body

    @classmethod
    def parser(cls, buf):
        (type_, length, experimenter, exp_type) = struct.unpack_from(
            '!HHII', buf, 0)
        if (experimenter, exp_type) != (NTR_VENDOR_ID, NTRT_SELECTION_METHOD):
            return parser.OFPGroupPropExperimenter.parser(buf)
        (_, _, method, param) = struct.unpack_from(_BODY_FMT, buf, 4)
        fields = []
        off = 4 + _BODY_LEN
        while off < length:
            (header,) = struct.unpack_from('!I', buf, off)
            fields.append(_oxm_name(header))
            off += 4 + (header & 0xff)
        return cls(method.rstrip(b'\0').decode(), param, fields,
                   type_, length, experimenter, exp_type)


def hash_selection_property(fields, basis=0):
    """Group property: pick buckets by hashing ``fields`` with ``basis``.
    Fields are OVS names (ip_src, ip_dst, nw_proto, tcp_src, tcp_dst,
    udp_src, udp_dst, ...) or os-ken OXM names (ipv4_src, ip_proto, ...)."""
    return NTRSelectionMethod('hash', basis, fields)


def _own_record_only(orig):
    """Wrap an os-ken ``parser(cls, buf, offset)`` whose record starts with a
    u16 total length.  The originals slice their trailing properties as
    ``buf[offset:offset + length]`` with ``offset`` already past the header
    (bug: should be ``start + length``), so they also swallow the next
    record.  Handing them just their own record makes that slice harmless."""
    def fixed(cls, buf, offset):
        (length,) = struct.unpack_from('!H', buf, offset)
        return orig(cls, buf[offset:offset + length], 0)
    fixed._hpn_fixed = True
    return classmethod(fixed)


def apply_parser_fixes():
    """Patch os-ken's OF1.5 parsers in place; safe to call more than once."""
    for cls in (parser.OFPBucket, parser.OFPGroupDescStats):
        if not getattr(cls.parser, '_hpn_fixed', False):
            cls.parser = _own_record_only(cls.parser.__func__)
    # The generic experimenter parser reads 4-byte words and fails on the
    # NTR property (length not a multiple of 4); ours falls back to it.
    parser.OFPGroupProp._TYPES[ofp.OFPGPT_EXPERIMENTER] = NTRSelectionMethod
