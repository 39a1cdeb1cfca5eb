"""A pipeline across 1, 2 and 3 ranks, measured and predicted side by side (docs/BENCHMARKS.md).

    .venv/bin/python bench/mpi_pipeline.py [--model zoo/real/resnet18/model.onnx --dim batch=8]

For each row the plan is made once (`tandem plan --strategy pipeline --microbatches M -o`), then
predicted by the planner's evaluator and by the simulator (`tandem simulate`), and run
(`tandem run --plan`, medians of --iterations timed runs): in one process on cpu-split.yaml
(two one-core devices), and under mpirun on mpi-two-hosts.yaml (2 ranks) and
mpi-three-hosts.yaml (3 ranks, oversubscribed on a 2-core machine), over loopback TCP. Per
stage (a device's busy time per run) and overall. Each row runs in its own processes, one
after the other."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TANDEM = os.path.join(REPO, "build", "src", "tandem")
CLUSTERS = os.path.join(REPO, "examples", "clusters")
MPI_ENV = {"OMPI_MCA_btl": "self,tcp", "OMPI_MCA_btl_tcp_if_include": "lo",
           "OMPI_MCA_oob_tcp_if_include": "lo", "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def run(command):
    result = subprocess.run(command, capture_output=True, text=True,
                            env={**os.environ, **MPI_ENV})
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)}\n{result.stdout}{result.stderr}")
    return json.loads(result.stdout)


def machine():
    with open("/proc/cpuinfo") as f:
        model = next((line.split(":", 1)[1].strip() for line in f if "model name" in line), "?")
    return f"{model}, {os.cpu_count()} vCPUs"


def ms(seconds):
    return f"{seconds * 1e3:.2f} ms"


def error(measured, predicted):
    return f"{(measured / predicted - 1) * 100:+.0f}%" if predicted > 0 else "-"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=os.path.join(REPO, "zoo/real/resnet18/model.onnx"))
    parser.add_argument("--dim", action="append", default=["batch=8"])
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    dims = [a for d in args.dim for a in ("--dim", d)]
    rows = [("1 process, 2 devices", "cpu-split.yaml", 1), ("2 ranks", "mpi-two-hosts.yaml", 2),
            ("3 ranks", "mpi-three-hosts.yaml", 3)]
    print(f"machine: {machine()}; model {os.path.relpath(args.model, REPO)} {' '.join(args.dim)}, "
          f"pipeline, {args.microbatches} micro-batches, median of {args.iterations} runs")
    print(f"{'':22} {'measured':>10} {'evaluator':>10} {'error':>7} {'simulator':>10} {'error':>7}")
    with tempfile.TemporaryDirectory() as folder:
        for label, cluster, ranks in rows:
            plan_file = os.path.join(folder, f"{ranks}.json")
            cluster_file = os.path.join(CLUSTERS, cluster)
            run([TANDEM, "plan", args.model, *dims, "--cluster", cluster_file, "--strategy",
                 "pipeline", "--microbatches", str(args.microbatches), "-o", plan_file, "--json"])
            simulated = run([TANDEM, "simulate", plan_file, "--json"])
            command = [TANDEM, "run", "--plan", plan_file, "--warmup", "3", "--iterations",
                       str(args.iterations), "--json"]
            if ranks > 1:
                command = ["mpirun", "-np", str(ranks), *command]
            measured = run(command)
            latency = measured["latency"]["median_s"]
            plan = measured["plan"]
            sim_latency = simulated["predicted"]["latency_s"]
            print(f"{label:22} {ms(latency):>10} {ms(plan['predicted_latency_s']):>10} "
                  f"{error(latency, plan['predicted_latency_s']):>7} {ms(sim_latency):>10} "
                  f"{error(latency, sim_latency):>7}")
            sim_busy = {d["id"]: d["busy_s"] for d in simulated["devices"]}
            for device in plan["devices"]:
                if device["busy_s"] == 0:
                    continue
                print(f"  {device['id'] + ' stage busy':20} {ms(device['busy_s']):>10} "
                      f"{ms(device['predicted_busy_s']):>10} "
                      f"{error(device['busy_s'], device['predicted_busy_s']):>7} "
                      f"{ms(sim_busy.get(device['id'], 0)):>10} "
                      f"{error(device['busy_s'], sim_busy.get(device['id'], 0)):>7}")
            for link in plan.get("host_links", []):
                print(f"  {link['from'] + ' -> ' + link['to']:20} {ms(link['network_s']):>10} "
                      f"{ms(link['predicted_s']):>10} "
                      f"{error(link['network_s'], link['predicted_s']):>7}")


if __name__ == "__main__":
    main()
