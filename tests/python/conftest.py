"""Shared helpers of the pe_actor tests.

ctest runs each test_*.py with PYTHONPATH at the build's python/ folder (the module),
PE_RUN_BINARY (pe-actor-run) and PE_TEST_DATA_DIR (tests/data) set; see python/CMakeLists.txt.
By hand: PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python
"""
import os
import pathlib

import numpy as np
import pytest

import pe_actor

DATA_DIR = pathlib.Path(os.environ.get("PE_TEST_DATA_DIR",
                                       pathlib.Path(__file__).resolve().parents[1] / "data"))

# numpy dtype -> ProgramDesc data_type, for every dtype the engine runs.
ENGINE_DTYPES = {
    np.float32: "FP32",
    np.int64: "INT64",
    np.int32: "INT32",
    np.uint8: "UINT8",
    np.bool_: "BOOL",
}


def tensor_var(name, data_type, dims, persistable=False):
    dims_text = " ".join(f"dims: {d}" for d in dims)
    return (f'vars {{ name: "{name}" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ '
            f'data_type: {data_type} {dims_text} }} }} }} persistable: {str(persistable).lower()} }}')


def text_program(vars_, ops):
    """A ProgramDesc in protobuf text format: one block of `vars_` and `ops` (text pieces)."""
    body = "\n".join(list(vars_) + list(ops))
    return f"blocks {{ idx: 0 parent_idx: -1\n{body}\n}}\n".encode()


def op(type_, inputs, outputs, attrs=""):
    ins = " ".join(f'inputs {{ parameter: "{k}" arguments: "{v}" }}' for k, v in inputs.items())
    outs = " ".join(f'outputs {{ parameter: "{k}" arguments: "{v}" }}' for k, v in outputs.items())
    return f'ops {{ type: "{type_}" {ins} {outs} {attrs} }}'


def assign_program(data_type, row_dims=(3,)):
    """x (fed, [-1, *row_dims]) -> assign -> y."""
    dims = (-1,) + tuple(row_dims)
    return pe_actor.Program(text_program(
        [tensor_var("x", data_type, dims), tensor_var("y", data_type, dims)],
        [op("assign", {"X": "x"}, {"Out": "y"})]))


EMPTY_STARTUP = pe_actor.Program(text_program([], []))


@pytest.fixture
def small_mlp():
    """A small MLP model and a fixed batch of 8 for it."""
    model = pe_actor.models.mlp(input_width=16, hidden=[8], classes=4, seed=3)
    rng = np.random.default_rng(7)
    feed = {model.image: rng.standard_normal((8, 16), dtype=np.float32),
            model.label: rng.integers(0, 4, (8, 1), dtype=np.int64)}
    return model, feed


def rss_bytes():
    """This process's resident set size now (VmRSS)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")
