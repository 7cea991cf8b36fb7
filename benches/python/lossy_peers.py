"""Lossy compressors of the Python ecosystem on the arrays the `lossy`
bench wrote: zfpy (zfp's fixed-accuracy mode) and pysz (SZ3's absolute
bound), each at the same absolute tolerance as ours.

Usage: lossy_peers.py DIR, with DIR/manifest.json listing
{"name", "file", "shape", "tolerances"}; the arrays are raw little-endian
float64. Prints one JSON object per (array, tolerance, library): ratio,
compress and decompress seconds per call, and the largest error measured
on the decompressed array (not the library's claim)."""

import json
import sys
import time

import numpy as np


def per_call(fn, budget=0.3):
    calls, start = 0, time.perf_counter()
    while calls < 3 or time.perf_counter() - start < budget:
        out = fn()
        calls += 1
    return (time.perf_counter() - start) / calls, out


def zfpy_run(array, tol):
    import zfpy

    t_c, blob = per_call(lambda: zfpy.compress_numpy(array, tolerance=tol))
    t_d, back = per_call(lambda: zfpy.decompress_numpy(blob))
    return len(blob), t_c, t_d, back


def pysz_run(array, tol):
    from pysz import sz, szConfig, szErrorBoundMode

    config = szConfig(array.shape)
    config.errorBoundMode = szErrorBoundMode.ABS
    config.absErrorBound = tol
    t_c, (blob, _) = per_call(lambda: sz.compress(array, config))
    t_d, (back, _) = per_call(lambda: sz.decompress(blob, array.dtype, array.shape))
    return blob.nbytes, t_c, t_d, back


def main():
    folder = sys.argv[1]
    with open(f"{folder}/manifest.json") as f:
        manifest = json.load(f)
    for entry in manifest:
        array = np.fromfile(f"{folder}/{entry['file']}", dtype="<f8").reshape(entry["shape"])
        for tol in entry["tolerances"]:
            for lib, run in (("zfpy", zfpy_run), ("pysz", pysz_run)):
                try:
                    size, t_c, t_d, back = run(array, tol)
                except ImportError:
                    continue
                print(json.dumps({
                    "name": entry["name"], "tolerance": tol, "lib": lib,
                    "ratio": array.nbytes / size, "compress_s": t_c, "decompress_s": t_d,
                    "max_error": float(np.max(np.abs(back.astype(np.float64) - array))),
                }), flush=True)


if __name__ == "__main__":
    main()
