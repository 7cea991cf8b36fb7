"""adjoint_checkpoints.codecs: the bound holds on random arrays (checked here,
not trusted), non-finite, constant and empty arrays come back bit for bit,
bad input raises typed errors, damaged bytes never decode silently."""

import numpy as np
import pytest

from adjoint_checkpoints import codecs

CODECS = codecs.available()
pytestmark = pytest.mark.skipif(not CODECS, reason="built without lossy codecs")


def fields(seed):
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 1, 2048)
    smooth = np.sin(2 * np.pi * rng.uniform(1, 20) * x) + rng.uniform(-5, 5)
    yield "smooth", smooth
    yield "noisy", smooth + rng.normal(0, 0.1, x.size)
    yield "tiny", smooth * 1e-300
    yield "huge", smooth * 1e300
    yield "2-D", np.outer(smooth[:64], smooth[::32])
    yield "3-D", rng.normal(size=(8, 12, 10)).cumsum(axis=0)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_error_never_exceeds_the_bound(codec, seed, dtype):
    for name, field in fields(seed):
        with np.errstate(over="ignore"):
            field = field.astype(dtype)
        if not np.all(np.isfinite(field)):
            continue  # float32 cannot hold the huge field: covered below
        wide = field.astype(np.float64)
        for bound in [("abs", 10.0 ** -(seed + 2)), ("rel", 10.0 ** -(2 * seed + 1))]:
            blob = codecs.compress(field, codec, **dict([bound]))
            back = codecs.decompress(blob)
            assert back.dtype == field.dtype and back.shape == field.shape
            error = float(np.max(np.abs(back.astype(np.float64) - wide)))
            header = codecs.info(blob)
            assert header["max_error"] == error, (name, bound)
            if header["lossless_reason"] is None:
                assert error <= header["tolerance"], (codec, name, bound, error)
                if bound[0] == "abs":
                    assert header["tolerance"] == bound[1]
                else:
                    assert header["tolerance"] == pytest.approx(bound[1] * (wide.max() - wide.min()))
            else:
                assert np.array_equal(back.view(np.uint8), field.view(np.uint8))


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
def test_non_finite_constant_and_empty_arrays_are_exact(codec, special):
    x = np.sin(np.arange(1000) / 50.0)
    x[437] = special
    for array, reason in [(x, "NonFinite"), (np.full(300, 2.5), "Constant"), (np.zeros(0), "Empty")]:
        blob = codecs.compress(array, codec, abs=1e-3)
        assert codecs.info(blob)["lossless_reason"] == reason
        back = codecs.decompress(blob)
        assert np.array_equal(back.view(np.uint8), array.view(np.uint8))


@pytest.mark.parametrize("codec", CODECS)
def test_damaged_bytes_raise(codec):
    blob = bytearray(codecs.compress(np.sin(np.arange(5000) / 40.0), codec, abs=1e-6))
    blob[-3] ^= 1
    with pytest.raises(codecs.CodecError, match="CRC"):
        codecs.decompress(blob)
    with pytest.raises(codecs.CodecError):
        codecs.decompress(b"not a compressed array")
    with pytest.raises(codecs.CodecError):
        codecs.decompress(bytes(blob[: len(blob) // 2]))


def test_bad_input_is_a_typed_error():
    x = np.ones(10)
    with pytest.raises(ValueError, match="exactly one bound"):
        codecs.compress(x, "zfp", abs=1e-3, rel=1e-3)
    with pytest.raises(ValueError, match="float32 or float64"):
        codecs.compress(np.arange(10), "zfp", abs=1e-3)
    with pytest.raises(codecs.CodecError, match="unknown codec"):
        codecs.compress(x, "gzip", abs=1e-3)
    with pytest.raises(codecs.CodecError, match="above 0"):
        codecs.compress(x, "zfp", abs=-1.0)
    with pytest.raises(codecs.CodecError, match="abs= or rel="):
        codecs.compress(x, "sz3", rate=8)
    for codec in {"zfp", "sz3"} - set(CODECS):
        with pytest.raises(codecs.CodecError, match="not in this build"):
            codecs.compress(x, codec, abs=1e-3)


def test_precision_and_rate_record_their_error():
    if "zfp" not in CODECS:
        pytest.skip("zfp not in this build")
    x = np.sin(np.arange(4096) / 100.0)
    for bound in [{"precision": 20}, {"rate": 12}]:
        blob = codecs.compress(x, "zfp", **bound)
        header = codecs.info(blob)
        assert header["tolerance"] is None
        assert header["max_error"] == float(np.max(np.abs(codecs.decompress(blob) - x)))
        assert 0 < header["max_error"] < 1e-2
