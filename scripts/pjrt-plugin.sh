#!/usr/bin/env bash
# Prints the path of the PJRT CPU plugin that scripts/setup.sh installed (xla-cpu-pjrt in .venv),
# for TANDEM_PJRT_PLUGIN. Exits 1 when it is not installed.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for plugin in "$REPO"/.venv/lib/python3*/site-packages/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so; do
  if [[ -f "$plugin" ]]; then
    echo "$plugin"
    exit 0
  fi
done
echo "pjrt-plugin: no xla-cpu-pjrt in $REPO/.venv (run scripts/setup.sh)" >&2
exit 1
