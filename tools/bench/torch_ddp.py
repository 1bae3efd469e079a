"""The PyTorch baseline of tools/bench/distributed.sh and collective.sh:
DistributedDataParallel on the gloo backend, 2 processes on loopback
(init_method tcp://127.0.0.1 on a free port), training the MLP of `rill train
--model mlp` as torch_mlp.py builds it (784-256-128-10 ReLU, Xavier-uniform
weights, zero biases, Adam lr 1e-3, softmax cross-entropy, the accuracy op, the
loss fetched every step), or another model of `rill train --model` as
torch_models.py builds it (MODEL: cnn, resnet, transformer), on real
Fashion-MNIST batches (fashion_batches.py: the first images of the training set
in file order, as many as the run needs up to the whole set, cycled). Each
global batch is cut in two: rank r trains on rows [r * B/2, (r + 1) * B/2).

Each process runs one torch thread and one OpenBLAS thread, and glibc's malloc
with the settings of malloc.env (RILL_BENCH_MALLOC=default leaves glibc's):
the script re-executes itself with that environment if it was not given it.
WARMUP steps (default 5; DDP builds its buckets in the first) are not timed;
then both ranks meet at a barrier and time STEPS steps, as a Rill
trainer times its epoch's training loop (start-up and evaluation outside).
Global samples/s = STEPS * B / the slower rank's seconds.

Plausibility, checked after the run, each failure said on stderr (prefix
"torch_ddp: IMPLAUSIBLE") and in the JSON's "warnings":
- the loss must fall: the mean of the last 10 timed steps' losses (both ranks)
  below that of the first 10 steps;
- the two replicas must end with the same parameters;
- a DDP step may take at most 1.5x (one process's step on the whole global
  batch + one gloo all-reduce of all the gradients): each rank computes half
  that batch, then all-reduces. The single-process step is timed in a process
  of its own after the DDP run, with the same data, threads and steps; the
  all-reduce is timed alone by the two ranks after their loop (median of 20);
- a rank may spend at most 30% of its CPU time in the kernel during the timed
  steps (getrusage; 15-30% is usual here for the MLP, whose gloo all-reduces
  are most of it, 2-17% for the CNN): more is page faults of tensors malloc
  maps afresh every step (malloc.env; RILL_BENCH_MALLOC=default shows them),
  whose cost depends on the virtual machine, not on PyTorch.

Prints one JSON line: global_batch, steps, samples_per_sec (global),
step_ms, rank_seconds, single_samples_per_sec, single_step_ms, allreduce_ms,
kernel_share, first_loss, last_loss, warnings.
Usage: torch_ddp.py GLOBAL_BATCH STEPS [WARMUP [MODEL]]
Run it with Debian's python (/usr/bin/python3) and python3-torch."""
import os
import sys

_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
if os.environ.get("RILL_BENCH_MALLOC", "fixed") != "default":
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "malloc.env")) as f:
        _ENV.update(line.strip().split("=", 1) for line in f
                    if line.strip() and not line.startswith("#"))
if any(os.environ.get(k) != v for k, v in _ENV.items()):
    # OpenBLAS and malloc read these when the process starts.
    os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **_ENV})

import json  # noqa: E402
import resource  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_batches  # noqa: E402
import torch_mlp  # noqa: E402
import torch_models  # noqa: E402

RANKS = 2
LOSS_WINDOW = 10
# Above this share of a rank's CPU time in the kernel, the timed steps were
# paying for something other than training (see the warning).
KERNEL_SHARE_LIMIT = 0.30


def build_model(name):
    """The model initialised as Rill initialises it, its Adam and its loss."""
    if name == "mlp":
        return torch_mlp.build_model()
    torch.manual_seed(0)
    model = torch_models.build(name)
    for m in model.modules():
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
            torch.nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3), torch.nn.CrossEntropyLoss()


def load(global_batch, steps):
    """The run's global batches as tensors (cycled when the set is shorter)."""
    examples = min(60000, max(fashion_batches.EXAMPLES, steps * global_batch))
    batches, _, _ = fashion_batches.load(global_batch, examples)
    return [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]


def worker(rank, port, global_batch, steps, warmup, name, results):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=RANKS)
    half = global_batch // RANKS
    data = [(x[rank * half:(rank + 1) * half].contiguous(), y[rank * half:(rank + 1) * half])
            for x, y in load(global_batch, warmup + steps)]
    model, opt, loss_fn = build_model(name)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    for i in range(warmup):
        x, y = data[i % len(data)]
        torch_mlp.train_step(ddp, opt, loss_fn, x, y)
    losses = []
    dist.barrier()
    start = time.perf_counter()
    usage_before = resource.getrusage(resource.RUSAGE_SELF)
    for i in range(warmup, warmup + steps):
        x, y = data[i % len(data)]
        losses.append(torch_mlp.train_step(ddp, opt, loss_fn, x, y))
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    user = usage.ru_utime - usage_before.ru_utime
    system = usage.ru_stime - usage_before.ru_stime

    # The all-reduce alone: the gradients' bytes as one flat tensor, as DDP's bucket.
    flat = torch.zeros(sum(p.numel() for p in model.parameters()))
    times = []
    for i in range(25):
        dist.barrier()
        before = time.perf_counter()
        dist.all_reduce(flat)
        if i >= 5:
            times.append((time.perf_counter() - before) * 1e3)
    checksum = sum(float(p.detach().double().sum()) for p in model.parameters())
    window = min(LOSS_WINDOW, len(losses))
    mine = torch.tensor([seconds, statistics.fmean(losses[:window]),
                         statistics.fmean(losses[-window:]), statistics.median(times), checksum,
                         system / max(user + system, 1e-9)],
                        dtype=torch.float64)
    every = [torch.zeros_like(mine) for _ in range(RANKS)]
    dist.all_gather(every, mine)
    if rank == 0:
        results.put([t.tolist() for t in every])
    dist.destroy_process_group()


def single_process(global_batch, steps, warmup, name, results):
    """One process's samples/s on the whole global batch, same loop (run in a
    process of its own, as the ranks are: in this one, which forked them, the
    CNN at global batch 1024 ran at 566 samples/s against 719 fresh)."""
    results.put(single_rate(global_batch, steps, warmup, name))


def single_rate(global_batch, steps, warmup, name):
    torch.set_num_threads(1)
    data = load(global_batch, warmup + steps)
    model, opt, loss_fn = build_model(name)
    for i in range(warmup):
        torch_mlp.train_step(model, opt, loss_fn, *data[i % len(data)])
    start = time.perf_counter()
    for i in range(warmup, warmup + steps):
        torch_mlp.train_step(model, opt, loss_fn, *data[i % len(data)])
    return steps * global_batch / (time.perf_counter() - start)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    if len(sys.argv) not in (3, 4, 5):
        sys.exit(__doc__.split("\n\n")[0] +
                 "\nusage: torch_ddp.py GLOBAL_BATCH STEPS [WARMUP [MODEL]]")
    global_batch, steps = int(sys.argv[1]), int(sys.argv[2])
    warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    name = sys.argv[4] if len(sys.argv) > 4 else "mlp"
    if global_batch % RANKS or steps < 1 or warmup < 1:
        sys.exit(f"torch_ddp: global batch {global_batch} must be even, steps and warm-up >= 1")
    spawn = mp.get_context("spawn")
    results = spawn.SimpleQueue()
    mp.spawn(worker, args=(free_port(), global_batch, steps, warmup, name, results), nprocs=RANKS)
    ranks = results.get()
    seconds = max(r[0] for r in ranks)
    rate = steps * global_batch / seconds
    first_loss = statistics.fmean(r[1] for r in ranks)
    last_loss = statistics.fmean(r[2] for r in ranks)
    allreduce_ms = max(r[3] for r in ranks)
    kernel_share = max(r[5] for r in ranks)
    single_run = spawn.Process(target=single_process,
                               args=(global_batch, steps, warmup, name, results))
    single_run.start()
    single_run.join()
    if single_run.exitcode != 0:
        sys.exit(f"torch_ddp: the single-process run failed (exit {single_run.exitcode})")
    single = results.get()
    step_ms = seconds / steps * 1e3
    single_step_ms = global_batch / single * 1e3

    warnings = []
    if not last_loss < first_loss:
        warnings.append(f"the loss did not fall ({first_loss:.4f} over the first {LOSS_WINDOW} "
                        f"steps, {last_loss:.4f} over the last)")
    checksums = [r[4] for r in ranks]
    if abs(checksums[0] - checksums[1]) > 1e-6 * max(1.0, abs(checksums[0])):
        warnings.append(f"the replicas' parameters differ (sums {checksums})")
    bound = 1.5 * (single_step_ms + allreduce_ms)
    if step_ms > bound:
        warnings.append(f"a DDP step took {step_ms:.3f} ms, more than 1.5x (one process's step "
                        f"on the global batch {single_step_ms:.3f} ms + an all-reduce "
                        f"{allreduce_ms:.3f} ms) = {bound:.3f} ms: the machine is busy or "
                        "DDP is not on its usual path")
    if kernel_share > KERNEL_SHARE_LIMIT:
        warnings.append(f"a rank spent {kernel_share:.0%} of its CPU time in the kernel during "
                        "the timed steps (page faults? see malloc.env: tensors malloc maps on "
                        "their own are faulted in afresh every step)")
    for w in warnings:
        print(f"torch_ddp: IMPLAUSIBLE ({name}, global batch {global_batch}): {w}",
              file=sys.stderr)
    print(json.dumps({
        "model": name, "global_batch": global_batch, "steps": steps,
        "samples_per_sec": round(rate, 1),
        "step_ms": round(step_ms, 4), "rank_seconds": [round(r[0], 4) for r in ranks],
        "single_samples_per_sec": round(single, 1), "single_step_ms": round(single_step_ms, 4),
        "allreduce_ms": round(allreduce_ms, 4), "kernel_share": round(kernel_share, 3),
        "first_loss": round(first_loss, 4),
        "last_loss": round(last_loss, 4), "warnings": warnings}), flush=True)


if __name__ == "__main__":
    main()
