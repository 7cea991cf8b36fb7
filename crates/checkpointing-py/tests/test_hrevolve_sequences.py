"""``checkpoint_schedules.hrevolve_sequences`` (the Revolve family as trees
of operations) against the reference, ``checkpoint_schedules`` 1.0.4, side
by side: the same sequence trees (every attribute of every node, ``repr``,
iteration, costs), the same tables, values and exceptions (class and
message), the same printed output, over parameter grids; and every public
name of every module."""

import contextlib
import importlib
import io
import itertools
import sys
import types
import warnings

import pytest

import adjoint_checkpoints

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Numba not available"
    import checkpoint_schedules as ref_package

MODULES = ["basic_functions", "utils", "revolve", "revolve_1d", "disk_revolve", "periodic_disk_revolve", "hrevolve"]
REF = "checkpoint_schedules.hrevolve_sequences"
OURS = "adjoint_checkpoints.checkpoint_schedules.hrevolve_sequences"


def namespace(package):
    """The submodules of a ``hrevolve_sequences`` package, by name."""
    return types.SimpleNamespace(**{m: importlib.import_module(f"{package}.{m}") for m in MODULES})


ref = namespace(REF)
ours = namespace(OURS)


def value(x, depth=0):
    """A comparable description of ``x``: its class name and, for the
    package's objects, every attribute (recursively); numbers with their
    type, so that ``5`` and ``5.0`` differ."""
    name = type(x).__name__
    if name == "Sequence":
        return (
            "Sequence",
            value(x.function),
            x.levels,
            x.concat,
            value(x.makespan),
            x.type,
            value(getattr(x, "storage", None)),
            value(getattr(x, "memory", None)),
            value(getattr(x, "disk", None)),
            sorted(vars(x)),
            [value(item) for item in x.sequence],
        )
    if name == "Operation":
        return ("Operation", x.type, value(x.index), value(x.params), sorted(vars(x)))
    if name == "Function":
        return ("Function", x.name, value(x.list), value(x.index), sorted(vars(x)))
    if name == "Table":
        return ("Table", value(x.content), x.size, x.print_table)
    if isinstance(x, (list, tuple)):
        return (name, [value(item) for item in x])
    if isinstance(x, dict):
        return ("dict", [(k, value(v)) for k, v in x.items()])
    if isinstance(x, float):
        return ("float", repr(x))
    return (name, repr(x))


def outcome(f, *args, **kwargs):
    """What calling ``f`` gives: its result described, or the exception's
    class and message; with what it printed."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            result = f(*args, **kwargs)
        return ("ok", value(result), out.getvalue())
    except Exception as e:  # noqa: BLE001
        return ("raised", type(e), str(e), out.getvalue())


def views(sequence):
    """Everything a user reads off a sequence: repr, str, the items
    iterated, the concatenated forms and the costs of the operations."""
    items = []
    try:
        items = list(sequence)
    except Exception as e:  # noqa: BLE001
        items = (type(e), str(e))
    seen = [outcome(repr, sequence), outcome(str, sequence), value(items)]
    seen.append([outcome(lambda op: (repr(op), op.cost()), op) for op in items if type(op).__name__ == "Operation"])
    for concat in (0, 1, 2, 3, 4):
        seen.append(outcome(sequence.concat_sequence, concat))
        seen.append(outcome(sequence.concat_sequence_hierarchic, concat))
        seen.append(outcome(sequence.canonical))
        sequence.concat = concat
        seen.append(outcome(repr, sequence))
        seen.append(outcome(lambda s: [repr(x) for x in s], sequence))
    sequence.concat = 0
    return seen


def same(scenario, *args):
    """Runs ``scenario(namespace, *args)`` on both packages and asserts the
    same outcome (result and views of any sequence)."""

    def run(ns):
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                result = scenario(ns, *args)
                seen = views(result) if type(result).__name__ == "Sequence" else None
            return ("ok", value(result), seen, out.getvalue())
        except Exception as e:  # noqa: BLE001
            return ("raised", type(e), str(e), out.getvalue())

    expected, got = run(ref), run(ours)
    assert got == expected, (scenario.__name__, args)
    return expected


COSTS = [(2, 2, 1, 1), (3, 1, 2, 1), (0.5, 1.5, 0.1, 0.7), (1, 1, 1, 0), (0, 0, 1, 3), (5, 2, 0.25, 1.5)]


# ---------------------------------------------------------------------------
# The sequence builders.


@pytest.mark.parametrize("rd, wd, uf, ub", COSTS)
def test_revolve(rd, wd, uf, ub):
    for l, cm in itertools.product([-2, -1, 0, 1, 2, 3, 4, 5, 7, 10, 16, 25], range(0, 6)):
        same(lambda ns, *a: ns.revolve.revolve(*a), l, cm, rd, wd, uf, ub)
    for l, cm in [(60, 3)]:
        same(lambda ns, *a: ns.revolve.revolve(*a), l, cm, rd, wd, uf, ub)


@pytest.mark.parametrize("rd, wd, uf, ub", COSTS)
def test_disk_revolve(rd, wd, uf, ub):
    for l, cm in itertools.product([-1, 0, 1, 2, 3, 4, 6, 9, 14], range(0, 5)):
        same(lambda ns, *a: ns.disk_revolve.disk_revolve(*a), l, cm, rd, wd, uf, ub)
    same(lambda ns, *a: ns.disk_revolve.disk_revolve(*a), 45, 2, rd, wd, uf, ub)


@pytest.mark.parametrize("rd, wd, uf, ub", COSTS[:4] + [(10, 7, 1, 1)])
def test_periodic_disk_revolve(rd, wd, uf, ub):
    for l, cm in itertools.product([-1, 0, 1, 2, 3, 5, 8, 13, 21, 34], range(0, 4)):
        same(lambda ns, *a: ns.periodic_disk_revolve.periodic_disk_revolve(*a), l, cm, rd, wd, uf, ub)
    # The tables and the period bound given.
    for l, cm, mmax in [(12, 2, 4), (20, 3, 30), (7, 1, 9)]:

        def given(ns, l, cm, mmax):
            opt_0 = ns.revolve.get_opt_0_table(mmax, cm, uf, ub)
            return ns.periodic_disk_revolve.periodic_disk_revolve(l, cm, rd, wd, uf, ub, opt_0=opt_0, mmax=mmax)

        same(given, l, cm, mmax)


HIERARCHIES = [
    ((1,), (0,), (0,)),
    ((3,), (1,), (2,)),
    ((0,), (0,), (0,)),
    ((1, 1), (0, 2), (0, 2)),
    ((2, 3), (0, 2), (0, 3)),
    ((2, 3), (1, 5), (1, 4)),
    ((1, 4), (0.5, 3), (0.25, 2)),
    ((0, 3), (0, 2), (0, 2)),
    ((3, 0), (0, 1), (0, 1)),
    ((1, 2, 3), (0, 1, 5), (0, 2, 6)),
    ((2, 1, 2), (0.1, 1, 10), (0.2, 2, 3)),
    ((1, 2), (0, 2, 3), (0, 2)),
]


@pytest.mark.parametrize("cvect, wvect, rvect", HIERARCHIES)
@pytest.mark.parametrize("uf, ub", [(1, 1), (0.5, 1.5)])
def test_hrevolve(cvect, wvect, rvect, uf, ub):
    for l in [-1, 0, 1, 2, 3, 4, 6, 9, 14, 20]:
        same(lambda ns, *a: ns.hrevolve.hrevolve(*a), l, list(cvect), list(wvect), list(rvect), uf, ub)
    same(lambda ns, *a: ns.hrevolve.hrevolve(*a), 7, cvect, wvect, rvect, uf, ub)  # tuples


def test_hrevolve_parts():
    for l, K, cmem in itertools.product([0, 1, 2, 5, 9], [0, 1], [0, 1, 2, 3]):
        for cvect, wvect, rvect in HIERARCHIES[3:7]:
            params = ref.utils.revolver_parameters(wvect, rvect, 1, 1)
            same(lambda ns, *a: ns.hrevolve.hrevolve_aux(*a, **params), l, K, cmem, cvect, wvect, rvect)
            same(lambda ns, *a: ns.hrevolve.hrevolve_recurse(*a, **params), l, K, cmem, cvect, wvect, rvect)


@pytest.mark.parametrize("rd, wd, uf, ub", COSTS[:4])
@pytest.mark.parametrize("one_read_disk", [True, False])
def test_revolve_1d(rd, wd, uf, ub, one_read_disk):
    for l, cm in itertools.product([-1, 0, 1, 2, 3, 5, 8, 12], range(0, 4)):

        def with_tables(ns, l, cm):
            params = ns.utils.revolver_parameters(wd, rd, uf, ub)
            params["one_read_disk"] = one_read_disk
            opt_0 = ns.revolve.get_opt_0_table(max(l, 1), cm, uf, ub)
            opt_1d = ns.revolve_1d.get_opt_1d_table(max(l, 1), cm, ub, uf, rd, one_read_disk, opt_0=opt_0)
            return ns.revolve_1d.revolve_1d(l, cm, opt_0, opt_1d, **params)

        def without_tables(ns, l, cm):
            return ns.revolve_1d.revolve_1d(l, cm, **ns.utils.revolver_parameters(wd, rd, uf, ub))

        same(with_tables, l, cm)
        same(without_tables, l, cm)


# ---------------------------------------------------------------------------
# The tables and the period functions.


@pytest.mark.parametrize("rd, wd, uf, ub", COSTS)
def test_tables(rd, wd, uf, ub):
    for lmax, cm in itertools.product([-1, 0, 1, 2, 5, 13], [-1, 0, 1, 2, 4]):
        same(lambda ns, *a: ns.revolve.get_opt_0_table(*a), lmax, cm, uf, ub)
        for one in (True, False, 0):
            same(lambda ns, *a: ns.revolve_1d.get_opt_1d_table(*a), lmax, cm, ub, uf, rd, one)
            same(lambda ns, *a: ns.disk_revolve.get_opt_inf_table(*a), lmax, cm, uf, ub, rd, wd, one)
    for lmax, (cvect, wvect, rvect) in itertools.product([-1, 0, 1, 2, 6, 11], HIERARCHIES):
        same(lambda ns, *a: ns.hrevolve.get_hopt_table(*a), lmax, cvect, wvect, rvect, ub, uf)


def test_period_functions():
    for cm, wd, rd, uf in itertools.product([0, 1, 2, 3], [0, 1, 2, 5], [0, 2, 3], [1, 0.5, 2]):
        if cm > 0:  # with none, both loop forever
            same(lambda ns, *a: ns.periodic_disk_revolve.compute_mmax(*a), cm, wd, rd, uf)
        same(lambda ns, *a: ns.periodic_disk_revolve.mxrr_close_formula(*a), cm, uf, rd, wd)
        same(lambda ns, *a: ns.periodic_disk_revolve.rel_cost_x(*a), cm + 1, wd + 0.5, wd, rd)
    same(lambda ns: ns.periodic_disk_revolve.compute_mmax(1, 1, 1, 0))  # ZeroDivisionError
    for cm, rd, wd in itertools.product([1, 2, 3], [1, 2, 4], [1, 3]):
        params = {"uf": 1, "ub": 1}

        def closed(ns, cm, rd, wd, with_1d):
            opt_0 = ns.revolve.get_opt_0_table(80, cm, 1, 1)
            opt_1d = ns.revolve_1d.get_opt_1d_table(80, cm, 1, 1, rd, False, opt_0=opt_0) if with_1d else None
            return ns.periodic_disk_revolve.mx_close_formula(cm, rd, wd, opt_0=opt_0, opt_1d=opt_1d, **params)

        same(closed, cm, rd, wd, True)
        same(closed, cm, rd, wd, False)

        def period(ns, cm, rd, wd, mmax):
            opt_0 = ns.revolve.get_opt_0_table(40, cm, 1, 1)
            opt_1d = ns.revolve_1d.get_opt_1d_table(40, cm, 1, 1, rd, False, opt_0=opt_0)
            p = dict(ns.utils.revolver_parameters(wd, rd, 1, 1))
            return ns.periodic_disk_revolve.compute_mx(cm, opt_0=opt_0, opt_1d=opt_1d, mmax=mmax, **p)

        for mmax in (None, 1, 5, 30, 60):
            same(period, cm, rd, wd, mmax)


# ---------------------------------------------------------------------------
# The objects.


def test_utils_and_helpers():
    same(lambda ns: ns.utils.revolver_parameters(1, 2, 3, 4))
    for x, y in itertools.product([-1, 0, 1, 3, 10], [-2, -1, 0, 1, 4]):
        same(lambda ns, *a: ns.basic_functions.beta(*a), x, y)
    same(lambda ns: ns.basic_functions.beta(1.5, 2))
    for items in [[], [3], [1, 2], [2, 1, 1, 3], [1.0, 1, 0.5, 0.5], (4, 4, 4), "ba", [float("nan"), 1]]:
        same(lambda ns, x: ns.basic_functions.argmin(x), items)
        same(lambda ns, x: ns.basic_functions.from_list_to_string(x), items)
    same(lambda ns: ns.basic_functions.official_names)


def all_operations(ns, params):
    """One operation of every type, with every kind of index."""
    ops = []
    for kind in ns.basic_functions.official_names:
        for index in (None, 3, True, [1, 2], [1, 2, 3], (1, 2), [2]):
            ops.append(ns.basic_functions.Operation(kind, index, params))
    return ops


def test_operation():
    params = {"uf": 2, "ub": 3, "up": 5, "wd": [1, 7], "rd": [4, 6], "cbwd": 9}

    def describe(ns, params):
        out = []
        for op in all_operations(ns, params):
            out.append((outcome(repr, op), outcome(op.cost)))
            for size, branch in [(2, -1), (3, 1), (-1, 2)]:
                out.append((outcome(op.shift, size, branch=branch), value(op.index)))
        return out

    same(describe, params)
    same(describe, {"uf": 1.5, "ub": 1, "wd": 2, "rd": 3})  # missing and scalar costs
    for bad in ["Nope", 3, None]:
        same(lambda ns, k: ns.basic_functions.Operation(k, 1, {}), bad)

    def mutated(ns):
        op = ns.basic_functions.Operation("Forward", [0, 2], {"uf": 1})
        op.type = "Forwards_multi"
        return outcome(op.cost), outcome(op.shift, 1), op.index

    same(mutated)


def test_function_and_table(tmp_path):
    def functions(ns):
        F = ns.basic_functions.Function
        return [repr(F(name, 4, index)) for name, index in [("HRevolve", [1, 2]), ("hrevolve_aux", [0, 3]), ("Revolve", 2)]]

    same(functions)

    def tables(ns, path):
        T = ns.basic_functions.Table
        t, u = T(), T(3, 1)
        for x in [5, 2.5, 7]:
            t.append(x)
        got = [value(t), value(u), repr(t), len(t), t[0], outcome(t.__getitem__, 3), outcome(t.__getitem__, -1)]
        got.append(list(t))
        t.remove(2.5)
        got += [value(t), outcome(t.remove, 99)]
        p = T()
        p.set_to_print(str(path))
        for x in range(12):
            p.append(x * 1.5)
        p.file.flush()
        got.append(open(path).read())
        return got

    same(tables, tmp_path / "table.txt")


def sequences(ns):
    """Sequences of every kind, fresh."""
    out = [
        ns.revolve.revolve(6, 2, 2, 3, 1, 1),
        ns.revolve.revolve(3, 1, 2, 3, 1, 1),
        ns.disk_revolve.disk_revolve(12, 1, 2, 2, 1, 1),
        ns.hrevolve.hrevolve(8, [1, 2], [0, 2], [0, 2], 1, 1),
        ns.hrevolve.hrevolve(5, [2], [0], [0], 1, 1),
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        out.append(ns.periodic_disk_revolve.periodic_disk_revolve(15, 2, 2, 2, 1, 1))
    return out


@pytest.mark.parametrize("which", range(6))
def test_sequence_methods(which):
    def apply(ns, which, method, *args):
        s = sequences(ns)[which]
        result = outcome(getattr(s, method), *args)
        return result, value(s)

    for method, args in [
        ("shift", (3,)),
        ("shift", (2, 0)),
        ("remove_useless_wm", ()),
        ("remove_useless_wm", (0,)),
        ("remove_last_discard", ()),
        ("first_operation", ()),
        ("next_operation", (0,)),
        ("next_operation", (1,)),
        ("convert_old_to_branch", (1,)),
        ("convert_new_to_branch", (2,)),
        ("remove", (0,)),
        ("remove", (-1,)),
        ("remove", (1,)),
        ("canonical", ()),
    ]:
        same(apply, which, method, *args)

    def insert(ns, which):
        s = sequences(ns)[which]
        Op = ns.basic_functions.Operation
        params = {"uf": 1, "ub": 1, "wd": [1, 2], "rd": [1, 2], "up": 1}
        got = []
        for kind, index in [("Write", [1, 5]), ("Write_memory", 4), ("Checkpoint_branch", [1, 2]), ("Write_disk", 9)]:
            got.append(outcome(s.insert, Op(kind, index, params)))
        got.append(outcome(s.insert_sequence, sequences(ns)[which]))
        got.append(outcome(s.insert_sequence, sequences(ns)[(which + 3) % 6]))
        return got, value(s)

    same(insert, which)


def test_sequence_constructor_and_errors():
    def odd(ns):
        bf = ns.basic_functions
        s = bf.Sequence(bf.Function("Revolve", 2, 1), concat=5)
        s.insert(bf.Operation("Forward", [0, 1], {"uf": 1}))
        s.insert_sequence(bf.Sequence(bf.Function("Revolve", 1, 1)))
        h = bf.Sequence(bf.Function("HRevolve", 2, [1, 1]), levels=2, concat=1)
        h.sequence.append("not an operation")
        return [outcome(repr, s), outcome(list, s), outcome(repr, h), outcome(bf.Sequence, bf.Function("x", 1, 1), levels=2)]

    same(odd)


def test_branch_conversions():
    def convert(ns, build, method):
        s = build(ns)
        return outcome(getattr(s, method), 4), value(s)

    builds = [
        lambda ns: ns.hrevolve.hrevolve(6, [2], [0], [0], 1, 1),
        lambda ns: ns.hrevolve.hrevolve(6, [1, 2], [0, 2], [0, 2], 1, 1),
        lambda ns: ns.revolve.revolve(5, 2, 1, 1, 1, 1),
        lambda ns: ns.disk_revolve.disk_revolve(9, 1, 2, 2, 1, 1),
    ]
    for build, method in itertools.product(builds, ["convert_old_to_branch", "convert_new_to_branch"]):
        same(convert, build, method)


# ---------------------------------------------------------------------------
# The names, and the installed layout.


def public(module):
    return {name for name in vars(module) if not name.startswith("_")}


@pytest.mark.parametrize("name", MODULES)
def test_every_public_name(name):
    reference, module = getattr(ref, name), getattr(ours, name)
    assert public(reference) <= public(module), public(reference) - public(module)
    for attr in public(reference):
        expected, got = getattr(reference, attr), getattr(module, attr)
        assert type(expected) is type(got) or (callable(expected) and callable(got)), attr
        assert isinstance(got, type) == isinstance(expected, type), attr
        assert isinstance(got, types.ModuleType) == isinstance(expected, types.ModuleType), attr


def test_installed_layout():
    ref_sub = importlib.import_module(REF)
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] == "checkpoint_schedules"}
    try:
        package = adjoint_checkpoints.install_as_checkpoint_schedules()
        import checkpoint_schedules

        assert checkpoint_schedules is package
        sub = importlib.import_module("checkpoint_schedules.hrevolve_sequences")
        assert sub is package.hrevolve_sequences
        assert public(ref_sub) <= public(sub)
        for name in MODULES:
            module = importlib.import_module(f"checkpoint_schedules.hrevolve_sequences.{name}")
            assert sys.modules[f"checkpoint_schedules.hrevolve_sequences.{name}"] is getattr(ours, name)
            # `import a.b.c as m` reads attributes: the functions, as in the reference.
            assert type(module) is type(importlib.import_module(f"{REF}.{name}")) or callable(module)
        from checkpoint_schedules.hrevolve_sequences.revolve import get_opt_0_table  # noqa: F401
        from checkpoint_schedules.hrevolve import HRevolve  # noqa: F401

        assert isinstance(sys.modules["checkpoint_schedules.hrevolve"], types.ModuleType)
        # The reference's top-level names from hrevolve_sequences.
        for name in ["revolve", "revolve_1d", "disk_revolve", "periodic_disk_revolve", "hrevolve", "basic_functions", "utils"]:
            assert hasattr(checkpoint_schedules, name), name
        for name in ["revolve", "disk_revolve", "hrevolve"]:
            args = (9, [1, 2], [0, 2], [0, 2], 1, 1) if name == "hrevolve" else (9, 2, 2, 2, 1, 1)
            expected = getattr(ref_package, name)(*args)
            got = getattr(checkpoint_schedules, name)(*args)
            assert value(got) == value(expected) and repr(got) == repr(expected)
        assert outcome(checkpoint_schedules.hrevolve, 3) == outcome(ref_package.hrevolve, 3)
        from checkpoint_schedules import hrevolve, revolve

        assert repr(revolve(4, 2, 1, 1, 1, 1)) == repr(ref_package.revolve(4, 2, 1, 1, 1, 1))
        assert repr(hrevolve(4, [2], [0], [0], 1, 1)) == repr(ref_package.hrevolve(4, [2], [0], [0], 1, 1))
    finally:
        for k in [k for k in sys.modules if k.split(".")[0] == "checkpoint_schedules"]:
            del sys.modules[k]
        sys.modules.update(saved)
