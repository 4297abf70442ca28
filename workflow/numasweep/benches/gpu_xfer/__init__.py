"""Host-device transfers (`gpu_xfer`, CUDA or HIP): everything particular to this benchmark.

The grid (one job per GPU count, host memory, pinning and repetition, driven from the CPUs of
the GPUs' node), the plan-time checks (sizes against host memory, GPUs and host cores), the
tables (one series per GPU of a run and per GPU count), the figures (bandwidth and transfer
time against size per direction), the raw tables, and the findings:

- a **plateau** per direction and host memory (`gpu_transfers`): the mean over runs of each run's
  median over the plateau sizes, with a t interval over the runs; pinned against pageable and the
  best weights with Welch intervals;
- **aggregate**: what the GPUs of one run move together (the sum over its GPUs at each size, the
  GPUs having started every batch together), next to what each of them moves and to what one GPU
  moves alone with the same host memory. Per-GPU and aggregate figures never share a number.
- **host node**: per GPU, host memory on the GPU's own NUMA node against memory on each other
  single node, same GPU count, pinning and direction.

Ratios come with a t interval over repetitions (`stats.unit_mean_interval`: each repetition's
mean log ratio over the plateau sizes is one replicate; sizes are never counted as independent).
A campaign with one repetition gets the ratio with "no interval" said beside it.
"""


from __future__ import annotations

import functools

from numasweep.benches.gpu_xfer import findings
from numasweep.benches.gpu_xfer.figures import plot_gpu_bandwidth, plot_gpu_latency, plot_node_matrix
from numasweep.benches.gpu_xfer.findings import gpu_transfers
from numasweep.benches.gpu_xfer.plan import GPU_XFER_HIP, check, expand
from numasweep.benches.gpu_xfer.report import gpu_raw_tables, headline
from numasweep.benches.gpu_xfer.tables import GPU_SIZE, SERIES, WITHIN
from numasweep.core.registry import ON_CPU_MEASURES, Bench, Checks, Claim, Figure, Launch, Presentation, Tables, register


BENCH = register(Bench(
    name="gpu_xfer",
    title="Host-device transfers",
    launch=Launch(
        kernels=("gpu_xfer", GPU_XFER_HIP),
        by="gpus",
        expand=expand,
        check=check,
    ),
    tables=Tables(
        required=("ngpus", GPU_SIZE, "read_bw(gib/s)", "write_bw(gib/s)"),
        positive=("ngpus", GPU_SIZE, "read_bw(gib/s)", "write_bw(gib/s)"),
        axis=GPU_SIZE,
        series=SERIES,
        within=WITHIN,
        numeric=("ngpus", "gpu", "gpu_node", GPU_SIZE),
        sizes=(GPU_SIZE,),
        words={"ngpus": "#GPU", "gpu": "GPU", "gpu_node": "GPU node"},
    ),
    analyse=lambda table, topo: [functools.partial(gpu_transfers, table, topo),
                                 functools.partial(findings.across_gpus_and_nodes, table, topo)],
    presentation=Presentation(
        category="Host-device transfers",
        variant="host memory",
        figures=(
            Figure("gpu_bandwidth", "Host-device transfer bandwidth against transfer size for each host memory "
                   "policy and weights, one panel per direction measured (host to device, device to host, then each "
                   "of the two when both run at once); the band spans the runs' lowest to highest where there are "
                   "several.",
                   draw=plot_gpu_bandwidth),
            Figure("gpu_latency", "Host-device transfer time against transfer size for each host memory policy "
                   "and weights, host to device left, device to host right; the band spans the runs' lowest to "
                   "highest where there are several.",
                   draw=plot_gpu_latency),
            Figure("gpu_node_matrix", "Host-device plateau bandwidth by host memory node (rows) and GPU (columns), "
                   "one panel per direction, each GPU alone, the GPU's own node boxed.",
                   draw=plot_node_matrix),
        ),
        report=gpu_raw_tables,
        subjects={"Bandwidth": (("gpu_plateau", "gpu_pinned", "gpu_weights", "gpu_aggregate", "gpu_host_node",
                                 "gpu_node_matrix"), ("gpu_bandwidth", "gpu_latency", "gpu_node_matrix"))},
        headline=headline,
    ),
    checks=Checks(
        on_cpu=ON_CPU_MEASURES,
        metrics={"read_bw(gib/s)": True, "write_bw(gib/s)": True},
        not_checked="gpu_xfer records no within-run spread, timer or first-touch columns to check; its "
                    "threads' share of time on their CPUs (on_cpu_pct) goes into each job's quality verdict",
        claims={
            "gpu_plateau": Claim(states=("plateau_gib_s", "large_gib_s")),
            "gpu_pinned": Claim(states=("ratio", "pinned_gib_s", "pageable_gib_s")),
            "gpu_weights": Claim(states=("ratio", "best_gib_s")),
            "gpu_aggregate": Claim(states=("aggregate_gib_s", "one_gpu_gib_s")),
            "gpu_host_node": Claim(states=("own_gib_s",)),
            "gpu_node_matrix": Claim(nothing="a plateau rate per GPU and host memory node, each with its interval "
                                             "in its table"),
        },
    ),
))
