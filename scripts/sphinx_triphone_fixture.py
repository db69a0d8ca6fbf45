#!/usr/bin/env python3
"""pocketsphinx 5.1.1's own triphone choices for crates/sphinx-am's tests (issue 55).

pocketsphinx picks the phone of every (base, left, right, word position) through
`bin_mdef_phone_id_nearest` (dict2pid.c: word-internal phones, the first phone of a word for
every left context, the last for every right context, single-phone words for both). This
script calls that function of the pocketsphinx wheel through ctypes for every combination of
the model's base phones and the four positions, and writes the phone ids as little-endian
uint32 in the order [position][base][left][right] (positions: internal, begin, end, single),
gzipped. The test compares `Mdef::nearest_phone` on all of them.

    .venv-peers/bin/python scripts/sphinx_triphone_fixture.py datasets/sphinx-en-us/mdef.gz \
        crates/sphinx-am/tests/data/reference/nearest_phone.u32.gz
"""
import ctypes
import glob
import gzip
import os
import struct
import sys
import tempfile

import pocketsphinx


def main() -> None:
    mdef_path, out = sys.argv[1], sys.argv[2]
    so = glob.glob(os.path.join(os.path.dirname(pocketsphinx.__file__), "_pocketsphinx*.so"))[0]
    lib = ctypes.CDLL(so)
    lib.bin_mdef_read.restype = ctypes.c_void_p
    lib.bin_mdef_read.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.bin_mdef_phone_id_nearest.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 4
    lib.bin_mdef_ciphone_str.restype = ctypes.c_char_p
    lib.bin_mdef_ciphone_str.argtypes = [ctypes.c_void_p, ctypes.c_int]
    with tempfile.TemporaryDirectory() as tmp:
        path = mdef_path
        if mdef_path.endswith(".gz"):
            path = os.path.join(tmp, "mdef")
            with gzip.open(mdef_path, "rb") as f, open(path, "wb") as g:
                g.write(f.read())
        m = lib.bin_mdef_read(None, path.encode())
        if not m:
            sys.exit(f"{mdef_path}: pocketsphinx could not read it")
        n = 0
        while n < 256 and lib.bin_mdef_ciphone_str(m, n):
            n += 1
        ids = [
            lib.bin_mdef_phone_id_nearest(m, b, l, r, pos)
            for pos in range(4)
            for b in range(n)
            for l in range(n)
            for r in range(n)
        ]
    tmp_out = out + ".tmp"
    with gzip.GzipFile(tmp_out, "wb", mtime=0) as f:
        f.write(struct.pack(f"<{len(ids)}I", *ids))
    os.replace(tmp_out, out)
    print(f"{out}: {n} base phones, {len(ids)} lookups, {len(set(ids))} distinct phones")


if __name__ == "__main__":
    main()
