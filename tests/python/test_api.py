"""The Python package against ONNX Runtime and the command: load, run, plan, simulate, save,
sessions, errors, the GIL and zero-copy outputs."""

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import tandem
from conftest import REPO, ZOO

CPU_SPLIT = REPO / "examples" / "clusters" / "cpu-split.yaml"
TANDEM = Path(os.environ.get("TANDEM_BIN", REPO / "build" / "src" / "tandem"))


def reference(path, inputs):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def zoo_inputs(entry, batch=None):
    """The zoo's input files, or seeded random inputs of the model's shape at `batch`."""
    if batch is None:
        return {i["name"]: np.load(ZOO / i["file"]) for i in entry["inputs"]}
    rng = np.random.default_rng(7)
    inputs = {}
    for i in entry["inputs"]:
        shape = [batch if d == "batch" else d for d in i["graph_shape"]]
        if i["dtype"] == "float32":
            inputs[i["name"]] = rng.standard_normal(shape).astype(np.float32)
        else:
            inputs[i["name"]] = rng.integers(0, 50, size=shape).astype(i["dtype"])
    return inputs


def assert_close(outputs, expected, rtol=1e-4, atol=1e-4):
    assert set(outputs) == set(expected)
    for name, value in expected.items():
        assert outputs[name].shape == value.shape, name
        np.testing.assert_allclose(outputs[name], value, rtol=rtol, atol=atol, err_msg=name)


def test_load_describes_the_model(zoo):
    entry = zoo["resnet"]
    model = tandem.load(ZOO / entry["path"])
    assert model.path == str(ZOO / entry["path"])
    [info] = model.inputs
    assert info.name == "input" and info.dtype == np.float32
    assert info.shape == ("batch", 3, 64, 64)  # as declared, the symbol by name
    assert info.bound_shape == (1, 3, 64, 64)  # batch bound to 1 when nothing binds it
    assert model.dims == {"batch": 1}
    assert model.op_counts["Conv"] > 5
    assert "BatchNormalization" not in model.op_counts  # folded into Conv for inference
    assert model.flops > 1e6
    assert entry["path"].split("/")[0] in model.summary()
    assert model.to_json()["nodes"] == model.nodes
    unfused = tandem.load(ZOO / entry["path"], fuse=False, dims={"batch": 4})
    assert "BatchNormalization" in unfused.op_counts
    assert unfused.inputs[0].bound_shape == (4, 3, 64, 64)
    assert unfused.flops == pytest.approx(4 * tandem.load(ZOO / entry["path"], fuse=False).flops)


@pytest.mark.parametrize("name", ["mlp", "resnet", "bert", "dlrm", "loop", "postproc"])
def test_run_matches_onnx_runtime(zoo, name):
    entry = zoo[name]
    inputs = zoo_inputs(entry)
    model = tandem.load(ZOO / entry["path"])
    assert_close(model.run(inputs), reference(ZOO / entry["path"], inputs))


def test_run_binds_shapes_from_the_arrays_and_compiles_each_once(zoo):
    entry = zoo["mlp"]
    model = tandem.load(ZOO / entry["path"])
    for batch in (1, 5, 1, 5, 3):
        inputs = zoo_inputs(entry, batch)
        outputs = model.run(inputs)
        assert outputs["logits"].shape == (batch, 10)
        assert_close(outputs, reference(ZOO / entry["path"], inputs))
    assert model.compiled_shapes == 3


def test_bytes_load_like_the_file(zoo, tmp_path):
    entry = zoo["mlp"]
    data = (ZOO / entry["path"]).read_bytes()
    model = tandem.load(data)
    cached = Path(model.path)
    assert cached.parent == tmp_path / "cache" / "models" and cached.read_bytes() == data
    assert tandem.load(bytearray(data)).path == model.path  # content-addressed, written once
    inputs = zoo_inputs(entry)
    assert_close(model.run(inputs), tandem.load(ZOO / entry["path"]).run(inputs), 0, 0)


def test_inputs_are_read_not_written_and_outputs_are_the_callers(zoo):
    entry = zoo["resnet"]
    model = tandem.load(ZOO / entry["path"])
    inputs = zoo_inputs(entry)
    before = inputs["input"].copy()
    first = model.run(inputs)
    np.testing.assert_array_equal(inputs["input"], before)
    logits = next(iter(first.values()))
    # Zero-copy: the array shares the output tensor's storage instead of owning a copy.
    assert not logits.flags.owndata and logits.flags.writeable
    kept = logits.copy()
    logits[...] = 0  # the caller's to write: the next run is unaffected
    second = model.run(inputs)
    np.testing.assert_array_equal(next(iter(second.values())), kept)


def test_non_contiguous_and_list_inputs_are_taken(zoo):
    entry = zoo["mlp"]
    model = tandem.load(ZOO / entry["path"])
    x = np.asfortranarray(zoo_inputs(entry)["x"])
    assert not x.flags.c_contiguous
    expected = model.run({"x": np.ascontiguousarray(x)})
    assert_close(model.run({"x": x}), expected, 0, 0)
    assert_close(model.run({"x": x.tolist()}), expected, 1e-6, 1e-6)


def test_errors_are_input_errors_with_the_commands_message(zoo, tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(tandem.InputError) as error:
        tandem.load(missing)
    assert isinstance(error.value, ValueError) and isinstance(error.value, tandem.Error)
    assert error.value.subject == str(missing)
    assert str(error.value).startswith(str(missing) + ": ")
    not_onnx = tmp_path / "bad.onnx"
    not_onnx.write_bytes(b"\x08\x07garbage")
    with pytest.raises(tandem.InputError, match="bad.onnx"):
        tandem.load(not_onnx)
    entry = zoo["mlp"]
    model = tandem.load(ZOO / entry["path"])
    with pytest.raises(tandem.InputError, match="no input 'y'.*its inputs: x"):
        model.run({"x": np.zeros((2, 256), np.float32), "y": np.zeros(1)})
    with pytest.raises(tandem.InputError, match="input 'x' is missing"):
        model.run({})
    with pytest.raises(tandem.InputError, match="dtype float64 does not match input 'x'"):
        model.run({"x": np.zeros((2, 256))})
    with pytest.raises(tandem.InputError, match="none Tandem runs"):
        model.run({"x": np.array([["a"]])})
    with pytest.raises(tandem.InputError, match="no symbolic dimension 'batchh'"):
        tandem.load(ZOO / entry["path"], dims={"batchh": 2})
    with pytest.raises(tandem.InputError, match="expected latency, throughput or cost"):
        model.plan(tandem.Cluster.local(), objective="speed")
    with pytest.raises(tandem.InputError, match="unknown|strategy"):
        model.plan(tandem.Cluster.local(), strategy="fastest")
    with pytest.raises(tandem.InputError, match="nothere.yaml"):
        tandem.Cluster.from_file(tmp_path / "nothere.yaml")


def test_clusters(zoo):
    cluster = tandem.Cluster.from_file(CPU_SPLIT)
    assert cluster.file == str(CPU_SPLIT)
    ids = [d.id for d in cluster.devices]
    assert len(ids) == 2 and all(d.backend == "cpu" and d.backend_built for d in cluster.devices)
    assert [d["id"] for d in cluster.to_json()["devices"]] == ids
    local = tandem.Cluster.local()
    assert local.file is None and [d.id for d in local.devices] == ["cpu0"]
    paper = tandem.Cluster.from_file(REPO / "examples" / "clusters" / "h100-4xv5e.yaml")
    assert {d.kind for d in paper.devices} >= {"gpu", "tpu"}


def test_plan_on_a_cluster_runs_and_matches(zoo):
    entry = zoo["resnet"]
    model = tandem.load(ZOO / entry["path"], dims={"batch": 2})
    cluster = tandem.Cluster.from_file(CPU_SPLIT)
    plan = model.plan(cluster, strategy="heft")
    assert plan.strategy == "heft" and plan.objective == "latency"
    assert plan.latency_seconds > 0 and 0 < plan.lower_bound <= plan.latency_seconds * 1.0001
    assert 0 < plan.efficiency <= 1.0001
    assert plan.batch == 2
    names = [s.strategy for s in plan.strategies]
    assert names[-1] == "heft" and any(n.startswith("single:") for n in names)
    assert all(s.feasible == (s.latency_seconds is not None) for s in plan.strategies)
    assert sum(d.nodes for d in plan.devices) == model.nodes
    assert sum(len(s.nodes) for s in plan.segments) == model.nodes
    assert "heft" in plan.summary()
    document = plan.to_json()
    assert document["strategy"] == "heft" and document["schema_version"] == tandem.json_schema_version
    inputs = zoo_inputs(entry)
    assert_close(plan.run(inputs), reference(ZOO / entry["path"], inputs))
    assert_close(plan.run(inputs), reference(ZOO / entry["path"], inputs))  # the executor reused
    with pytest.raises(tandem.InputError, match="shape"):
        plan.run(zoo_inputs(entry, batch=3))


def test_pins_and_exclusions_shape_the_plan(zoo):
    entry = zoo["mlp"]
    model = tandem.load(ZOO / entry["path"])
    cluster = tandem.Cluster.from_file(CPU_SPLIT)
    [first, second] = [d.id for d in cluster.devices]
    plan = model.plan(cluster, strategy="greedy", exclude=[first])
    assert {s.device for s in plan.segments} == {second}
    with pytest.raises(tandem.InputError):
        model.plan(cluster, exclude=[first, second])


def test_simulate_and_save_agree_with_the_command(zoo, tmp_path):
    entry = zoo["resnet"]
    model = tandem.load(ZOO / entry["path"], dims={"batch": 2})
    plan = model.plan(tandem.Cluster.from_file(CPU_SPLIT), strategy="pipeline", microbatches=2)
    trace, report = tmp_path / "trace.json", tmp_path / "report.html"
    simulation = plan.simulate(trace=str(trace), report=str(report))
    assert simulation.latency_seconds > 0 and simulation.overflow is None
    assert len(simulation.devices) == 2
    assert all(d.busy_seconds > 0 for d in simulation.devices)
    assert json.loads(trace.read_text())["traceEvents"]
    assert "<html" in report.read_text()[:200].lower()
    assert simulation.to_json()["predicted"]["latency_s"] == pytest.approx(simulation.latency_seconds)
    saved = tmp_path / "plan.json"
    plan.save(str(saved))
    again = tandem.Plan.load(str(saved))
    assert again.strategy == plan.strategy and again.microbatches == plan.microbatches
    assert again.simulate().latency_seconds == pytest.approx(simulation.latency_seconds)
    command = subprocess.run([str(TANDEM), "simulate", str(saved), "--json"], capture_output=True,
                             text=True, check=True)
    assert json.loads(command.stdout)["predicted"]["latency_s"] == pytest.approx(simulation.latency_seconds)
    with pytest.raises(tandem.InputError, match="Cluster.local"):
        model.plan(tandem.Cluster.local()).save(str(tmp_path / "local.json"))


def test_a_failing_device_is_a_device_error_naming_it(zoo, monkeypatch):
    entry = zoo["resnet"]
    monkeypatch.setenv("TANDEM_FAULT", "fail:cpu1:after=0")  # as tests/cli inject faults
    model = tandem.load(ZOO / entry["path"], dims={"batch": 2})
    plan = model.plan(tandem.Cluster.from_file(CPU_SPLIT), strategy="single:cpu1")
    with pytest.raises(tandem.DeviceError) as error:
        plan.run(zoo_inputs(entry))
    assert isinstance(error.value, RuntimeError) and error.value.subject == "cpu1"
    assert str(error.value).startswith("cpu1: ")


def test_session_plans_each_shape_once(zoo):
    entry = zoo["bert"]
    session = tandem.Session(tandem.load(ZOO / entry["path"]), tandem.Cluster.from_file(CPU_SPLIT))
    for batch in (2, 1, 2, 1, 2):
        inputs = zoo_inputs(entry, batch)
        inputs["attention_mask"] = np.ones_like(inputs["attention_mask"])
        assert_close(session.run(inputs), reference(ZOO / entry["path"], inputs))
    assert (session.misses, session.hits) == (2, 3)
    assert len(session.plans) == 2
    assert tandem.Session(tandem.load(ZOO / entry["path"])).cluster.devices[0].id == "cpu0"


def test_the_gil_is_released_while_tandem_runs(zoo):
    # Runs long enough (~10 ms) that a counter free to run ticks far more than between runs.
    entry = zoo["resnet"]
    model = tandem.load(ZOO / entry["path"], dims={"batch": 32})
    inputs = zoo_inputs(entry, 32)
    model.run(inputs)
    ticks, running = [0], [True]

    def count():
        while running[0]:
            ticks[0] += 1
            time.sleep(0)

    counter = threading.Thread(target=count)
    counter.start()
    start = time.perf_counter()
    runs = 10
    for _ in range(runs):
        model.run(inputs)
    elapsed = time.perf_counter() - start
    running[0] = False
    counter.join()
    # Holding the GIL, the counter would move only between runs (a few ticks each).
    assert ticks[0] > 50 * runs, f"{ticks[0]} ticks in {elapsed:.2f} s of {runs} runs"


def test_threads_share_a_model(zoo):
    entry = zoo["mlp"]
    model = tandem.load(ZOO / entry["path"])
    batches = [zoo_inputs(entry, b) for b in (1, 2, 3, 4)]
    expected = [model.run(b) for b in batches]
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(20):
                results[k] = model.run(batches[k])
        except Exception as error:  # reported below, with the thread
            errors.append((k, error))

    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    for k in range(4):
        assert_close(results[k], expected[k], 0, 0)


def test_type_stubs_ship_beside_the_module():
    stub = Path(tandem._tandem.__file__).with_name("_tandem.pyi")
    text = stub.read_text()
    for name in ("class Model", "class Plan", "class Cluster", "def run(", "def simulate("):
        assert name in text, name
    assert (Path(tandem.__file__).parent / "py.typed").exists()
