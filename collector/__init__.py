"""On-device collector: runs one workload plan and writes a JSON-lines record of facts.

It imports only the standard library and torch (plus torch_neuronx where present), so the
folder can be copied onto a device host and run as ``python -m collector``. It measures and
records; it never judges. Judgement lives in ``reportgen``.
"""

# The one place the collector's version is written: run_start.collector and
# run_start.provenance.collector_version read it. 0.2 writes schema 1.2 (content hashes and
# provenance); 0.3 writes schema 1.3 (peak device memory per warm series, the CPU model as the
# device, backends described by data, one module supervising child processes); 0.4 lists the
# local files the workload module imports (provenance role workload_import: from 0.4 on, a log
# that lists none imported none; 0.4.1 imports them as the listing reads them, relative imports
# from the module's folder; 0.5.0 loads from that folder only the files run_start hashed, each
# checked against its hash, the module itself included, names the plan by the text it read,
# starts fresh children without the working folder on their path, and bounds warm repetitions
# at 10,000; 0.6.0 names a run's folder by the plan's workload name kept to letters, digits,
# '.', '_' and '-' (never a path) and takes a target's alias in [workload] target; 0.7.0
# ends a run with exit 4 when a cell or a fresh process failed for lack of space, logs the cache
# condition a compile really had (a failed one too), records a git commit only of a checkout
# that tracks the collector's folder, loads a workload again when it changed before run_start,
# and writes an inspection only when whole; 0.8.0 writes schema 1.4: the workload's stated
# weights origin, and what the process's threads ran and waited for a CPU over each warm loop,
# whose wait re-measures a contended series; 0.8.1 keeps its own process's temporary files
# (Inductor's precompiled headers) in a temp dir of its process, removed at exit, ends a run on SIGHUP as on
# SIGTERM, names its Neuron log file by its process so a later run sweeps it, says in one line
# that it needs Python 3.11, and takes `run` as its default command's name; 0.9.0 writes schema
# 1.5 (per dtype, the reference's elements its two runs differ beyond the tolerance), compares an
# integer or boolean output exactly, counts a graph break torch files as 'unimplemented'
# (data-dependent branching), feeds every call its own copy of the inputs and names a model that
# writes into its input, names the modules a model was built in training mode with, and stops a
# plan whose task criterion names another metric than the module's TASK_METRIC; 0.9.1 keeps a
# cell's judged outputs as its first call left them, counts a NaN facing a NaN as agreement in
# noise_beyond_tolerance, and stops a TASK_METRIC that is not a string; 0.10.0 calls a warm series
# unstable for two more criteria: two speeds with samples between them (a least-squares cut) and
# a steady trend (Theil-Sen and Mann-Kendall), so it re-measures such series, and refuses to
# compare a uint64 output with another dtype, and leaves a series of one repeated value
# unclassified, reads an integer output's worst difference in int64, and refuses to pass a
# cell whose every output is empty); 0.11.0 writes schema 1.6 (a workload_reads event: the files
# the workload read through Python and the packages it imported while its module loaded and its
# model and inputs were made), and runs no cell in a fresh process whose built weights hash
# otherwise than the plan event's); 0.12.0 keeps the run's files inside --out when a workload
# changes the working directory, sends what is written to standard output during the run to
# standard error (standard output holds the run folder alone), bounds [timing] warmup, and
# refuses a plan none of whose chosen cells has criteria, and ends the processes a workload
# started in its own process and left running; 0.13.0 records the TORCHDYNAMO_ and
# TORCH_COMPILE_ variables (and ATEN_CPU_CAPABILITY on cpu), refuses a plan with a dotted TOML
# key of more than 64 parts at its line, and loads its built-in backend adapters through their
# descriptors; 0.14.0 records the host's thread-pool, math-library and allocator variables
# (OMP_, GOMP_, KMP_, MKL_, ONEDNN_, DNNL_, OPENBLAS_, MALLOC_, LD_PRELOAD, PYTORCH_) on every
# backend, and the CUDA math libraries' switches on cuda, and in a localised cell names a
# module only the candidate called (another code path); 0.15.0 records what 0.14.0 does (a
# release of reportgen: the distribution has one version); 0.16.0 stops the warm or cold timing
# of a cell whose make_inputs, called again for a timed call (timing.scope.preprocessing), gives
# other input names, shapes, dtypes or layouts than the cell was checked with (the cell is still
# checked on its own inputs); 0.17.0 stops a generation run whose top_k is at least the model's
# vocabulary (every top-k overlap would be 1) at its first reference, before any cell, with a plan
# error (exit 2), and calls a warm series unstable whose middle third ran apart from both outer
# thirds (a hump: the speed moved and came back), so it re-measures it; 0.18.0 (event schema
# 1.7) takes a generation cell's warm generations again while a series of them is unstable and
# keeps the earlier series in its generation event; 0.19.0 records a cache-check repeat that the
# cells chosen (--only) leave nothing to test (no other shape of its group compiled between, or
# not its own shape) as skipped with the reason; 0.20.0 feeds a module localised alone a fresh
# copy of its reference inputs for each call (a module changing its input in place had been fed
# its own output) and refuses an abbreviated option; 0.21.0 runs a backend's before_torch hook
# (the neuron variables) before torch is first imported, as its note says (collector.workload
# imported torch first since 0.1.0), also for a target named by its alias, and names the
# backend log file it makes collector-backendlog-PID-XXXXXXXX.log (owner-only; the sweep removes no other), and calls a warm series of 10 samples or more
# two modes when its median lies in the widest gap between sorted samples (or, at an odd count,
# on its edge) at lower bars (wider
# than half the wider side's range, 8% of the median), so it re-measures it; it also refuses the
# neuron target where torch.neuron.is_available() is not true, decides the neuron family by the
# version rule before any XLA module found beside it, and says in one line (exit 3) that torch
# cannot be imported (a backend module it autoloads is broken); 0.22.0 says in one line (exit 4)
# that --help could not be written (it exited 120, or 0 with unbuffered output), names a word that
# is no command or option, and takes the functions a workload module must define from one table
# that plan-check reads too; 0.23.0 says an eager cell's cold call is recorded from its check
# (not announced at the end as if measured then), and its workload_reads event says its watch
# covers the reference too; 0.24.0 hashes each file in its folder into run_start's provenance
# (role collector_source), so that two copies without git are told apart; 0.25.0 keeps no warm
# timing of a loop whose calls wrote into the inputs they reuse, records an eager cell's
# operators without the ones its input check dispatches, ends the processes the workload left in
# the background (and their children) and exits past a thread the workload left running; 0.26.0
# errs a generation shape whose make_inputs returns input_ids of another batch; 0.27.0 records
# what workload code raises that is no Exception (asyncio.CancelledError) as its cell's failure,
# keeps a cell's first 200 warnings, checks a fresh process built the run's non-persistent
# buffers too, runs a bf16 or fp16 training plan on its loss and grad tolerances, refuses a
# --profile that matches no chosen cell, an --out inside its own folder and a value_range its
# input's dtype cannot hold, and checks comparison rules on the shapes that run; 0.28.0 logs a
# warm series whose loop's CPU wait it recorded but could not read as unclassified, records
# integer inputs at the model's call without setting dispatch modes aside inside a timed first
# call, names a misspelled required option, and runs inspect with a cache folder of its own;
# 0.29.0 tells a Ctrl-C while its modules load in one line (exit 130), and inspects a graph with
# the model and inputs cast to a planned dtype, as a cell runs them;
# change it with every release of the collector,
# with reportgen's and the package's (pyproject.toml): one distribution, one version.
__version__ = "0.29.0"

import sys

# The collector reads TOML with tomllib and starts its fresh processes with `python -P`, both
# Python 3.11: on an older interpreter (a device image's venv, say) it says so in one line before
# anything else is imported, not with a traceback from its first import. This file parses on
# any Python from 2.7 on (no f-string: `python` is 2.7 on some device images).
if sys.version_info < (3, 11):
    sys.stderr.write(
        "collector: needs Python 3.11 or newer, this is %d.%d (%s); "  # noqa: UP031
        "run it with a Python 3.11+ environment that has torch\n"
        % (sys.version_info[0], sys.version_info[1], sys.executable)
    )
    raise SystemExit(2)
