"""Two safetensors files hold the same tensors, byte for byte (their metadata aside: a save's id)."""
import json
import struct


def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    return {name: (h["dtype"], h["shape"], data[h["data_offsets"][0]:h["data_offsets"][1]]) for name, h in header.items()}


def differences(a, b):
    """'' when equal, else what differs first."""
    ta, tb = tensors(a), tensors(b)
    if sorted(ta) != sorted(tb):
        return "different tensor names"
    for name in sorted(ta):
        if ta[name] != tb[name]:
            return "tensor %s" % name
    return ""
