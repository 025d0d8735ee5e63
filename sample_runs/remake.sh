#!/usr/bin/env bash
# Remakes the CPU sample runs with the collector of this checkout: each shipped workload once,
# one after another, on this host's CPU (target cpu), then copies each run's log and profiler
# traces into sample_runs/ (the saved tensors stay in the output folder: they are not
# committed). Older runs are kept: they are the earlier collector generations.
#
#   sample_runs/remake.sh [OUT]      OUT: where the runs are written (default: a new temp folder)
#
# Needs the test install (torch 2.13.0 CPU and the MiniLM package). Takes tens of minutes on a
# 2-core machine; progress goes to stderr. The run ids it adds are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-$(mktemp -d)}"
python="${PYTHON:-python3}"
mkdir -p "$out"

plans=(
  "collector/workloads/tiny_encoder.toml --profile b1-l16-contiguous-float32-compiled"
  "collector/workloads/heat_solver.toml"
  "collector/workloads/tiny_classifier.toml"
  "collector/workloads/minilm.toml --warm 10"
  "collector/workloads/scenario_a.toml"
)

added=()
for entry in "${plans[@]}"; do
  read -r -a words <<<"$entry"
  echo "remake: ${words[*]}" >&2
  run_dir=$("$python" -m collector --workload "${words[0]}" "${words[@]:1}" --target cpu --out "$out" | tail -n 1)
  id=$(basename "$run_dir")
  mkdir -p "sample_runs/$id"
  cp "$run_dir/events.jsonl" "sample_runs/$id/"
  if [ -d "$run_dir/traces" ] && [ -n "$(ls -A "$run_dir/traces")" ]; then
    cp -R "$run_dir/traces" "sample_runs/$id/"
  fi
  added+=("$id")
done
printf 'added: %s\n' "${added[@]}"
