"""The typed user snippet (tests/typed/user_snippet.py) is also a working
program: scripts/check-types.sh type-checks it with ``mypy --strict``,
and this runs it."""

import pathlib
import runpy

import pytest

SNIPPET = pathlib.Path(__file__).parent / "typed" / "user_snippet.py"


def test_the_typed_snippet_runs():
    pytest.importorskip("jax")
    pytest.importorskip("torch")
    runpy.run_path(str(SNIPPET), run_name="__main__")


def test_the_package_ships_its_stubs():
    import adjoint_checkpoints

    package = pathlib.Path(adjoint_checkpoints.__file__).parent
    assert (package / "py.typed").is_file()
    assert (package / "_native.pyi").is_file()
