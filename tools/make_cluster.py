#!/usr/bin/env python3
"""Write a large cluster file (docs/CLUSTERS.md) for `tandem plan`, `simulate` and `compare`.

    python3 tools/make_cluster.py --hosts 256 --host-devices nvidia-h100-sxm:8 \\
        [--tpu-hosts 64 --tpu-devices google-tpu-v5e:4] --network network-200g -o cluster.yaml

Every host holds devices of one preset (`backend: none`: plan and simulate only):
  - GPUs in a host are joined pairwise at their NVLink generation (NVSwitch), as
    examples/clusters/8xh100-nvlink.yaml has it: nvlink3 for an A100, nvlink4 for an H100 or
    H200, nvlink5 for a B200; an L4 has none (its host's PCIe only);
  - TPU chips in a host are a 2-D grid of ICI links of their generation (2x2 for 4 chips, 2x4
    for 8), as examples/clusters/two-hosts.yaml has it;
  - each device reaches its host over its preset's own host link (implicit: PCIe);
  - hosts are joined through one network switch (`--topology switch`, the default): a host of
    the file marked `switch: true`, one link per host at the `--network` preset's port rate. A
    switch forwards without staging in memory, so a transfer between two hosts pays both ports'
    latency and the slower port's bandwidth once. 1,024 hosts are 1,024 network links this way;
    `--topology mesh` (a link between every pair of hosts, n(n-1)/2 of them) is for a few hosts.

`--fabric none` leaves out the links between devices of a host; `--fabric PRESET` names another
link preset. No preset publishes a price (docs/CLUSTERS.md): `--price PRESET=USD_PER_HOUR`
writes your own figure on every device of that preset, its source saying it was given here.

The first group's hosts are h0, h1, ..., the second's t0, t1, ...; a device is <host>-<kind><n>
(h12-gpu3, t0-tpu1). The file is deterministic: the same arguments write the same bytes.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

# Device preset -> (kind, link preset between the devices of one host or None).
KNOWN_PRESETS = {
    "nvidia-a100-80gb": ("gpu", "nvlink3"),
    "nvidia-h100-sxm": ("gpu", "nvlink4"),
    "nvidia-h100-pcie": ("gpu", None),
    "nvidia-h200": ("gpu", "nvlink4"),
    "nvidia-b200": ("gpu", "nvlink5"),
    "nvidia-l4": ("gpu", None),
    "google-tpu-v4": ("tpu", "ici-v4"),
    "google-tpu-v5e": ("tpu", "ici-v5e"),
    "google-tpu-v5p": ("tpu", "ici-v5p"),
    "google-tpu-v6e": ("tpu", "ici-v6e"),
    "cpu-generic-avx2": ("cpu", None),
}
LINK_PRESETS = {
    "pcie-gen4-x16", "pcie-gen5-x16", "tpu-v4-host-pcie", "tpu-host-pcie", "tpu-v6e-host-pcie",
    "nvlink3", "nvlink4", "nvlink5", "ici-v4", "ici-v5e", "ici-v5p", "ici-v6e",
    "network-100g", "network-200g", "network-400g",
}
SWITCH = "fabric"


class Group:
    def __init__(self, hosts: int, spec: str, prefix: str, flag: str):
        preset, _, count = spec.partition(":")
        if preset not in KNOWN_PRESETS:
            raise SystemExit(f"make_cluster.py: {flag} {spec}: unknown device preset '{preset}' "
                             f"(known: {', '.join(sorted(KNOWN_PRESETS))})")
        try:
            self.per_host = int(count) if count else 1
        except ValueError:
            raise SystemExit(f"make_cluster.py: {flag} {spec}: '{count}' is not a device count")
        if self.per_host < 1 or hosts < 1:
            raise SystemExit(f"make_cluster.py: {flag} {spec}: hosts and devices per host are "
                             "at least 1")
        self.hosts, self.preset, self.prefix = hosts, preset, prefix
        self.kind, self.fabric = KNOWN_PRESETS[preset]

    def host_ids(self):
        return [f"{self.prefix}{h}" for h in range(self.hosts)]

    def device_ids(self, host: str):
        return [f"{host}-{self.kind}{d}" for d in range(self.per_host)]


def grid(count: int):
    """Rows x columns of a TPU host's ICI grid: as square as the count allows (2x2, 2x4)."""
    rows = int(math.isqrt(count))
    while count % rows:
        rows -= 1
    return rows, count // rows


def fabric_links(group: Group, host: str, preset: str):
    ids = group.device_ids(host)
    if len(ids) < 2:
        return []
    if group.kind == "gpu":
        return [f"  - {{between: [{', '.join(ids)}], preset: {preset}}}"]
    rows, columns = grid(len(ids))
    lines = []
    for r in range(rows):
        for c in range(columns):
            here = ids[r * columns + c]
            if c + 1 < columns:
                lines.append(f"  - {{from: {here}, to: {ids[r * columns + c + 1]}, preset: {preset}}}")
            if r + 1 < rows:
                lines.append(f"  - {{from: {here}, to: {ids[(r + 1) * columns + c]}, preset: {preset}}}")
    return lines


def describe(group: Group, fabric: str | None):
    joined = "no links between them" if not fabric else (
        f"{fabric} between every pair" if group.kind == "gpu"
        else f"{fabric} as a {'x'.join(map(str, grid(group.per_host)))} grid")
    return f"{group.hosts} hosts of {group.per_host} {group.preset} ({joined})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, required=True, help="hosts of the first group")
    parser.add_argument("--host-devices", required=True, metavar="PRESET:N",
                        help="each first-group host's devices, e.g. nvidia-h100-sxm:8")
    parser.add_argument("--tpu-hosts", type=int, default=0,
                        help="hosts of a second group (any preset, despite the name)")
    parser.add_argument("--tpu-devices", metavar="PRESET:N",
                        help="each second-group host's devices, e.g. google-tpu-v5e:4")
    parser.add_argument("--network", default="network-200g",
                        help="link preset of each host's network port (default network-200g)")
    parser.add_argument("--topology", choices=["switch", "mesh"], default="switch",
                        help="hosts on one switch (default) or a link between every pair")
    parser.add_argument("--fabric", metavar="PRESET|none",
                        help="link preset between the devices of a host, instead of their own")
    parser.add_argument("--price", action="append", default=[], metavar="PRESET=USD_PER_HOUR",
                        help="your own price for every device of a preset (repeatable)")
    parser.add_argument("-o", "--output", required=True, help="the cluster file to write")
    args = parser.parse_args(argv)

    groups = [Group(args.hosts, args.host_devices, "h", "--host-devices")]
    if args.tpu_hosts:
        if not args.tpu_devices:
            raise SystemExit("make_cluster.py: --tpu-hosts needs --tpu-devices PRESET:N")
        groups.append(Group(args.tpu_hosts, args.tpu_devices, "t", "--tpu-devices"))
    elif args.tpu_devices:
        raise SystemExit("make_cluster.py: --tpu-devices needs --tpu-hosts N")
    for name in [args.network] + ([args.fabric] if args.fabric not in (None, "none") else []):
        if name not in LINK_PRESETS:
            raise SystemExit(f"make_cluster.py: unknown link preset '{name}' "
                             f"(known: {', '.join(sorted(LINK_PRESETS))})")
    prices = {}
    for entry in args.price:
        preset, _, value = entry.partition("=")
        try:
            prices[preset] = float(value)
        except ValueError:
            raise SystemExit(f"make_cluster.py: --price {entry}: expected PRESET=USD_PER_HOUR")
        if preset not in {g.preset for g in groups} or prices[preset] <= 0:
            raise SystemExit(f"make_cluster.py: --price {entry}: no device of that preset, or a "
                             "price that is not positive")

    fabrics = [None if args.fabric == "none" else (args.fabric or g.fabric) for g in groups]
    hosts = [host for g in groups for host in g.host_ids()]
    command = "tools/make_cluster.py " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]))
    topology = (f"each host's {args.network} port on one non-blocking switch ('{SWITCH}')"
                if args.topology == "switch" else f"{args.network} between every pair of hosts")
    lines = [f"# Generated by {command}",
             "# " + "; ".join(describe(g, f) for g, f in zip(groups, fabrics)) + ";",
             f"# {topology}. Simulate only (backend: none)."]
    if args.topology == "switch":
        lines.append("hosts:")
        lines.append(f"  - {{id: {SWITCH}, switch: true}}")
        lines += [f"  - {host}" for host in hosts]
    else:
        lines.append(f"hosts: [{', '.join(hosts)}]")
    lines.append("devices:")
    for g in groups:
        price = ""
        if g.preset in prices:
            price = (f", figures: {{price_per_hour: {{value: {prices[g.preset]:g} USD/h, source: "
                     f"\"given to tools/make_cluster.py --price\"}}}}")
        for host in g.host_ids():
            count = f", count: {g.per_host}" if g.per_host > 1 else ""
            name = f"{host}-{g.kind}" if g.per_host > 1 else f"{host}-{g.kind}0"
            lines.append(f"  - {{id: {name}{count}, preset: {g.preset}, host: {host}, "
                         f"backend: none{price}}}")
    lines.append("links:")
    for g, fabric in zip(groups, fabrics):
        if fabric:
            for host in g.host_ids():
                lines += fabric_links(g, host, fabric)
    if args.topology == "switch":
        lines += [f"  - {{from: {host}, to: {SWITCH}, preset: {args.network}}}" for host in hosts]
    elif len(hosts) > 1:
        lines.append(f"  - {{between: [{', '.join(hosts)}], preset: {args.network}}}")
    if lines[-1] == "links:":
        lines.pop()
    text = "\n".join(lines) + "\n"
    folder = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(folder, exist_ok=True)
    with open(args.output, "w") as f:
        f.write(text)
    devices = sum(g.hosts * g.per_host for g in groups)
    links = 0
    for g, fabric in zip(groups, fabrics):
        if fabric and g.per_host > 1:
            rows, columns = grid(g.per_host)
            pairs = (g.per_host * (g.per_host - 1) // 2 if g.kind == "gpu"
                     else rows * (columns - 1) + columns * (rows - 1))
            links += g.hosts * pairs
    links += len(hosts) if args.topology == "switch" else len(hosts) * (len(hosts) - 1) // 2
    print(f"{args.output}: {len(hosts)} hosts, {devices} devices, {links} links "
          "(and each device's link to its host)")


if __name__ == "__main__":
    main()
