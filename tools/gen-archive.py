#!/usr/bin/env python3
"""Deterministic synthetic cluster archive of training-job logs, for benchmarks.

  tools/gen-archive.py OUTDIR [--runs N] [--hosts H] [--ranks R] [--size 3G] [--seed S]
                              [--containers plain,zst,gz,tar.zst,tar.gz,zip]
  tools/gen-archive.py --single FILE[.zst|.gz] [--hosts H] [--ranks R] [--size 200M] [--seed S]

OUTDIR gets N runs of H hosts x R ranks a host. Each run is one of three kinds of job
(DeepSpeed engine, HF Trainer with DeepSpeed, Megatron-DeepSpeed), one of two layouts
(one pdsh-prefixed file per host, `<host>.log`, or one file per rank,
`<host>/rank<global>.log`) and one container type; the first runs take each container
of --containers in turn, so every type is present once N >= the number of types:

  plain     OUTDIR/<run>/...log           plain text
  zst       OUTDIR/<run>/...log.zst       zstd CLI (-3)
  gz        OUTDIR/<run>/...log.gz        gzip CLI (-6 -n)
  tar.zst   OUTDIR/<run>.tar.zst          members <run>/...log
  tar.gz    OUTDIR/<run>.tar.gz
  zip       OUTDIR/<run>.zip              deflate

--size is the total of decompressed text (K/M/G suffixes, powers of 1000); the number of
steps of every run follows from it. Lines (mirroring /work/shared/corpus): the NCCL
INFO set-up of every rank (bootstrap, NET/IB, affinity, trees, ring channels, Init
COMPLETE) and, dominating, per-step lines: DeepSpeed step / `time (ms)` timer /
timer.py throughput lines and 3-line see_memory_usage reports (after the first step
and every tenth: every DeepSpeed run has one), HF loss dicts and tqdm bars rewritten
with lone \\r, Megatron `iteration N/ M | ...` lines and memory (MB)
reports; loss-scale OVERFLOW lines; unrecognized prints (checkpoint saves, data
loading, wandb). About a third of the runs fail: a CUDA OOM traceback on one rank
(`[rankN]:` prefixed), a ProcessGroupNCCL watchdog timeout on every rank, or a
SIGKILL; each failure ends with torchrun's `failed (exitcode: ...)` line and its
ChildFailedError Root Cause table. Every rank prints its own per-step lines (as with
log_dist(ranks=[-1])), so file sizes are even across ranks.

--single writes one run as one pdsh-prefixed file (all hosts interleaved, the shape of
a launcher's stdout); .zst or .gz pipes it through the zstd or gzip CLI.

Deterministic: every choice is drawn from random.Random seeded with (seed, run, rank),
tar and zip members carry fixed times and owners, gzip writes no name or time. The same
flags give the same bytes (with the same zstd and gzip versions). A summary goes to
stderr: runs, files, bytes, lines, seconds.
"""
import argparse
import datetime
import io
import multiprocessing
import os
import random
import subprocess
import sys
import tarfile
import time
import zipfile

CONTAINERS = ("plain", "zst", "gz", "tar.zst", "tar.gz", "zip")
MODELS = ("llama2-7b", "llama3-8b", "qwen2-7b", "mistral-7b", "gpt2-xl", "bloom-7b1",
          "falcon-40b", "opt-13b", "Aquila-7b", "yi-34b", "olmo-7b", "phi-2")
JOBS = ("sft", "pretrain", "dpo", "zero3", "lora", "ppo")
T0 = 1719792000  # 2024-07-01 00:00:00 UTC
MEM_EVERY = 10


def parse_size(s):
    mult = {"k": 1e3, "m": 1e6, "g": 1e9}.get(s[-1:].lower())
    return int(float(s[:-1]) * mult) if mult else int(s)


class Clock:
    """DeepSpeed-style '2024-07-01 12:00:05,123' stamps, the date part cached."""

    def __init__(self):
        self.day = -1
        self.date = ""

    def ds(self, ms):
        s = ms // 1000
        d = s // 86400
        if d != self.day:
            self.day = d
            self.date = datetime.datetime.fromtimestamp(d * 86400, datetime.timezone.utc).strftime("%Y-%m-%d")
        sod = s % 86400
        return "%s %02d:%02d:%02d,%03d" % (self.date, sod // 3600, sod // 60 % 60, sod % 60, ms % 1000)

    def glog(self, ms):
        """'1218 20:27:21.426415540' (month-day, as in '[E1218 20:27:21.426415540 ...')."""
        dt = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
        return "%02d%02d %02d:%02d:%02d.%03d415540" % (dt.month, dt.day, dt.hour, dt.minute, dt.second, ms % 1000)

    def torchrun(self, ms):
        dt = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc)
        return dt.strftime("%Y-%m-%d_%H:%M:%S")


class Run:
    """One job, drawn from (seed, idx)."""

    def __init__(self, a, idx):
        rnd = random.Random("run:%d:%d" % (a.seed, idx))
        self.idx = idx
        self.seed = a.seed
        self.name = "%s-%s-%05d" % (rnd.choice(MODELS), rnd.choice(JOBS), idx)
        self.kind = rnd.choices(("deepspeed", "hf", "megatron"), (5, 3, 2))[0]
        self.layout = rnd.choice(("host", "rank"))
        self.nhosts, self.nranks = a.hosts, a.ranks
        self.world = self.nhosts * self.nranks
        first = rnd.randrange(1024)
        self.hosts = ["gpu%04d" % ((first + h) % 1024 + 1) for h in range(self.nhosts)]
        self.t0_ms = (T0 + idx * 1800 + rnd.randrange(1800)) * 1000
        self.dt_ms = 2000 + rnd.randrange(40000)
        self.thr = 2.0 + rnd.random() * 60
        self.mem = 8.0 + rnd.random() * 60
        self.channels = rnd.choice((4, 8, 16, 24, 32))
        self.comm_seed = rnd.getrandbits(40)
        self.outcome = rnd.choices(("ok", "oom", "watchdog", "sigkill"), (13, 3, 2, 2))[0]
        self.fail_host = rnd.randrange(self.nhosts)
        self.fail_local = rnd.randrange(self.nranks)
        # drawn last, so the same seed gives the same text whatever --containers says
        conts = a.containers
        self.container = conts[idx] if idx < len(conts) else rnd.choice(conts)
        self.steps = 1  # set by plan_steps
        self.fail_step = None

    def plan_steps(self, per_rank_bytes):
        """Steps so that one rank's text is about per_rank_bytes."""
        fixed = per_step = 0.0
        probes = (0, 1) if self.world > 1 else (0,)
        for g in probes:  # rank 0 prints more (tqdm, Running training), the others alike
            probe = RankText(self, g // self.nranks, g % self.nranks, "")
            w = 1.0 / self.world if g == 0 else 1.0 - 1.0 / self.world
            fixed += w * (len(probe.init()) + len(probe.tail(1)))
            probe.first_mem = False  # (one memory report in MEM_EVERY steps, as in most)
            per_step += w * sum(len(probe.step(s)) for s in range(1, MEM_EVERY + 1)) / MEM_EVERY
        self.steps = max(2, int((per_rank_bytes - fixed) / per_step))
        if self.outcome != "ok":  # dies at the last step it prints, 90% through the plan
            self.fail_step = self.steps

    def files(self):
        """(relative path, host index, local ranks) of the run's files."""
        if self.layout == "host":
            return [("%s.log" % h, hi, range(self.nranks)) for hi, h in enumerate(self.hosts)]
        return [("%s/rank%d.log" % (h, hi * self.nranks + lr), hi, (lr,))
                for hi, h in enumerate(self.hosts) for lr in range(self.nranks)]


class RankText:
    """The lines one rank prints. prefix is the pdsh 'host: ' prefix or ''."""

    def __init__(self, run, hi, lr, prefix):
        self.r = run
        self.hi, self.lr = hi, lr
        self.host = run.hosts[hi]
        self.g = hi * run.nranks + lr
        self.p = prefix
        self.rnd = random.Random("rank:%d:%d:%d" % (run.seed, run.idx, self.g))
        self.pid = 1000 + self.rnd.randrange(60000)
        self.clock = Clock()
        self.nccl = "%s%s:%d:%d [%d] NCCL INFO " % (prefix, self.host, self.pid, self.pid + 71, lr)
        ds = prefix + "[%s] [INFO] [logging.py:96:log_dist] [Rank " + str(self.g) + "] "
        self.t_step = (ds + "step=%d, skipped=%d, lr=[%.6e], mom=[(0.9, 0.999)]\n" +
                       ds + "time (ms) | fwd_microstep: %.2f | bwd_microstep: %.2f | bwd_inner_microstep: %.2f"
                       " | bwd_allreduce_microstep: %.2f | step_microstep: %.2f\n" +
                       prefix + "[%s] [INFO] [timer.py:260:stop] epoch=0/micro_step=%d/global_step=%d, "
                       "RunningAvgSamplesPerSec=" + ("%.10f" % run.thr) + ", CurrSamplesPerSec=%.10f, MemAllocated=%.2fGB, "
                       "MaxMemAllocated=%.2fGB\n")
        self.t_loss = "{'loss': %.4f, 'grad_norm': %.13f, 'learning_rate': %.13e, 'epoch': %.2f}\n"
        mem = prefix + "[%s] [INFO] [utils.py:"
        self.t_mem = (mem + "800:see_memory_usage] After step %d\n" +
                      mem + "801:see_memory_usage] MA %.2f GB         Max_MA %.2f GB         CA %.2f GB"
                      "         Max_CA %d GB \n" +
                      mem + "808:see_memory_usage] CPU Virtual Memory:  used = %.2f GB, percent = %.1f%%\n")
        self.t_mega = (prefix + " iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms):"
                       " %.1f | learning rate: %.3E | global batch size: %5d | lm loss: %.6E | loss scale:"
                       " %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan"
                       " iterations: %3d |\n")
        self.t_tqdm = "\r%3d%%|%s| %d/%d [%02d:%02d<%02d:%02d, %.2fs/it]"
        self.tqdm_clear = "\r" + " " * 54 + "\r"
        self.first_mem = True  # a memory report after the first step too

    # ---- NCCL set-up ----------------------------------------------------------------
    def init(self):
        r, p, n, rnd = self.r, self.p, self.nccl, self.rnd
        t = r.t0_ms
        out = []
        ip = "10.31.%d.%d" % (self.hi // 250, self.hi % 250 + 2)
        if r.kind == "megatron":
            out.append(p + "using world size: %d, data-parallel size: %d, tensor-model-parallel size: 1, "
                       "pipeline-model-parallel size: 1\n" % (r.world, r.world))
        else:
            out.append(p + "[%s] [INFO] [real_accelerator.py:203:get_accelerator] Setting ds_accelerator to cuda "
                       "(auto detect)\n" % self.clock.ds(t))
            out.append(p + "[%s] [INFO] [comm.py:637:init_distributed] cdb=None\n" % self.clock.ds(t + 210))
        out.append(p + "Loading extension module cpu_adam...\n")
        out.append(p + "Time to load cpu_adam op: %.15f seconds\n" % (2 + rnd.random() * 20))
        boot = "%s%s:%d:%d [%d] NCCL INFO " % (p, self.host, self.pid, self.pid, self.lr)
        out.append(boot + "Bootstrap : Using ib0:%s<0>\n" % ip)
        out.append(boot + "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n")
        out.append(boot + "cudaDriverVersion 12020\n")
        if self.g == 0:
            out.append(p + "NCCL version 2.18.5+cuda12.2\n")
        out.append(n + "NCCL_SOCKET_IFNAME set by environment to ib0\n")
        out.append(n + "NCCL_IB_HCA set by environment to mlx5_0,mlx5_1,mlx5_2,mlx5_3\n")
        out.append(n + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB ib0:%s<0>\n" % ip)
        out.append(n + "Using network IB\n")
        for ci, size in enumerate((r.world, r.nranks)):  # world, then the node-local group
            rank = self.g if ci == 0 else self.lr
            comm = 0x55d000000000 + (r.comm_seed + self.g * 2 + ci) % 0x100000000
            cid = (r.comm_seed * 2654435761 + ci) % (1 << 64)
            bus = "%x000" % (0x18 + self.lr * 0x10)
            out.append(n + "comm 0x%x rank %d nranks %d cudaDev %d nvmlDev %d busId %s commId 0x%x - Init START\n"
                       % (comm, rank, size, self.lr, self.lr, bus, cid))
            out.append(n + "Setting affinity for GPU %d to ffff,ffffffff\n" % self.lr)
            nxt, prv = (rank + 1) % size, (rank - 1) % size
            out.append(n + "Trees [0] %d/-1/-1->%d->%d [1] %d/-1/-1->%d->%d\n" % (nxt, rank, prv, nxt, rank, prv))
            out.append(n + "P2P Chunksize set to 131072\n")
            if rank == 0:
                ring = " ".join("%3d" % i for i in range(size))
                for ch in range(r.channels):
                    out.append(n + "Channel %02d/%02d : %s\n" % (ch, r.channels, ring))
            cross = size > r.nranks and (self.lr == 0 or self.lr == r.nranks - 1)
            for ch in range(r.channels):
                if cross and self.lr == 0:
                    out.append(n + "Channel %02d/0 : %d[%d] -> %d[%d] [receive] via NET/IB/%d\n"
                               % (ch, prv, r.nranks - 1, rank, 0, ch % 4))
                if cross and self.lr == r.nranks - 1:
                    out.append(n + "Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d\n"
                               % (ch, rank, self.lr, nxt, 0, ch % 4))
                else:
                    out.append(n + "Channel %02d/0 : %d[%d] -> %d[%d] via P2P/IPC/read\n"
                               % (ch, rank, self.lr, nxt, (self.lr + 1) % r.nranks))
            out.append(n + "Connected all rings\n")
            for ch in range(r.channels):  # the tree connections, intra-node
                out.append(n + "Channel %02d/0 : %d[%d] -> %d[%d] via P2P/IPC/read\n"
                           % (ch, rank, self.lr, prv, (self.lr - 1) % r.nranks))
            out.append(n + "Connected all trees\n")
            out.append(n + "threadThresholds 8/8/64 | %d/8/64 | 512 | 512\n" % (size * 8))
            out.append(n + "%d coll channels, 0 nvls channels, %d p2p channels, 2 p2p channels per peer\n"
                       % (r.channels, r.channels))
            out.append(n + "comm 0x%x rank %d nranks %d cudaDev %d nvmlDev %d busId %s commId 0x%x - Init COMPLETE\n"
                       % (comm, rank, size, self.lr, self.lr, bus, cid))
        out.append(p + "/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:460: UserWarning: "
                   "torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False explicitly.\n")
        out.append(p + "  warnings.warn(\n")
        out.append(p + "[data] rank %d: loaded %d samples from shard %d/64\n" % (self.g, 40000 + rnd.randrange(9000),
                                                                              self.g % 64))
        if r.kind == "hf" and self.g == 0:
            ts = self.clock.ds(t + 900)
            total = r.steps if r.fail_step is None else r.steps * 10 // 9
            for line in ("***** Running training *****", "  Num examples = %d" % (total * 32 * r.world),
                         "  Num Epochs = 1", "  Instantaneous batch size per device = 4",
                         "  Gradient Accumulation steps = 8", "  Total optimization steps = %d" % total,
                         "  Number of trainable parameters = 6,738,415,616"):
                out.append(p + "[INFO|trainer.py:2078] %s >> %s\n" % (ts, line))
        return "".join(out)

    # ---- one step -------------------------------------------------------------------
    def step(self, s):
        r, rnd = self.r, self.rnd
        ms = r.t0_ms + 60000 + s * r.dt_ms + rnd.randrange(400)
        total = r.steps if r.fail_step is None else r.steps * 10 // 9
        lr = 2e-5 * min(1.0, s / 50.0)
        loss = 1.2 + 9.0 * 30 / (30 + s) + rnd.random() * 0.3
        gn = 0.2 + rnd.random() * 3
        ma = r.mem * 0.6 + (s % 7) * 0.11
        mx = r.mem + self.lr * 0.07 + (s * 13 % 97) / 100.0
        out = []
        if r.kind == "megatron":
            if s == 1:
                out.append(self.p + "[before the start of training step] datetime: %s\n" % self.clock.ds(ms)[:19])
            out.append(self.t_mega % (s, total, s * 32 * r.world, r.dt_ms * (0.95 + rnd.random() * 0.1), lr,
                                      32 * r.world, loss, 65536.0, gn, 0, 0))
            if s == 1:
                out.append(self.p + "[Rank %d] (after 1 iterations) memory (MB) | allocated: %.1f | max allocated: %.1f"
                           " | reserved: %.1f | max reserved: %.1f\n" % (self.g, ma * 1024, mx * 1024,
                                                                         mx * 1100, mx * 1100))
        else:
            cur = r.thr * (0.9 + rnd.random() * 0.2)
            fwd = r.dt_ms * 0.3 * (0.9 + rnd.random() * 0.2)
            bwd = fwd * 2
            ts = self.clock.ds(ms)
            if s <= 3:
                out.append(self.p + "[%s] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank %d "
                           "Skipping step. Attempted loss scale: %d, reducing to %d\n"
                           % (ts, self.g, 1 << (20 - s), 1 << (19 - s)))
            out.append(self.t_step % (ts, s, min(s, 3), lr, ts, fwd, bwd, bwd * 0.6, bwd * 0.4, fwd * 0.1,
                                      ts, s * 8, s, cur, ma, mx))
            if r.kind == "hf":
                # tqdm redraws the bar with lone \r; the loss dict ends the physical line
                out.append(self.p)
                if self.g == 0:
                    for k in (s - 1, s):
                        el, rem = k * r.dt_ms // 1000, (total - k) * r.dt_ms // 1000
                        bar = "\u2588" * (10 * k // total) + " " * (10 - 10 * k // total)
                        out.append(self.t_tqdm % (100 * k // total, bar, k, total, el // 60 % 60, el % 60,
                                                  rem // 60 % 60, rem % 60, r.dt_ms / 1000))
                    out.append(self.tqdm_clear)
                out.append(self.t_loss % (loss, gn, lr, s / total))
            if s % MEM_EVERY == 0 or (s == 1 and self.first_mem):  # every run has one
                out.append(self.t_mem % (ts, s, ts, ma, mx, mx + 1.3, int(mx + 2.5), ts, 150 + rnd.random() * 50,
                                         10 + rnd.random() * 10))
        if s % 100 == 0 and self.lr == 0:
            out.append(self.p + "Saving model checkpoint to /checkpoints/%s/checkpoint-%d\n" % (r.name, s))
        if s % 37 == 0:
            out.append(self.p + "wandb: Syncing run %s (%d/%d)\n" % (r.name, s, total))
        return "".join(out)

    # ---- the end --------------------------------------------------------------------
    def tail(self, s):
        r, p = self.r, self.p
        ms = r.t0_ms + 60000 + (s + 1) * r.dt_ms
        out = []
        if r.outcome == "ok":
            comm = 0x55d000000000 + (r.comm_seed + self.g * 2) % 0x100000000
            out.append(self.nccl + "comm 0x%x rank %d nranks %d cudaDev %d busId %x000 - Destroy COMPLETE\n"
                       % (comm, self.g, r.world, self.lr, 0x18 + self.lr * 0x10))
            if self.g == 0 and r.kind != "megatron":
                out.append(p + "{'train_runtime': %.4f, 'train_samples_per_second': %.3f, "
                           "'train_steps_per_second': %.3f, 'train_loss': %.4f, 'epoch': 1.0}\n"
                           % (s * r.dt_ms / 1000, r.thr, 1000 / r.dt_ms, 1.9))
            return "".join(out)
        failing = self.hi == r.fail_host and self.lr == r.fail_local
        rk = p + "[rank%d]: " % self.g
        if r.outcome == "oom" and failing:
            frames = (("/workspace/train.py", 412, "<module>", "main()"),
                      ("/workspace/train.py", 388, "main", "engine.backward(loss)"),
                      ("/usr/local/lib/python3.10/dist-packages/deepspeed/utils/nvtx.py", 15, "wrapped_fn",
                       "ret_val = func(*args, **kwargs)"),
                      ("/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", 1976, "backward",
                       "self.optimizer.backward(loss, retain_graph=retain_graph)"),
                      ("/usr/local/lib/python3.10/dist-packages/torch/autograd/__init__.py", 266, "backward",
                       "Variable._execution_engine.run_backward("))
            out.append(rk + "Traceback (most recent call last):\n")
            for f, ln, fn, code in frames:
                out.append(rk + '  File "%s", line %d, in %s\n' % (f, ln, fn))
                out.append(rk + "    %s\n" % code)
            out.append(rk + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU %d has a total "
                       "capacity of 79.32 GiB of which %.2f GiB is free. Process %d has 76.92 GiB memory in use. Of the "
                       "allocated memory 73.28 GiB is allocated by PyTorch, and 1.59 GiB is reserved by PyTorch but "
                       "unallocated. If reserved but unallocated memory is large try setting "
                       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                       "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
                       % (1 + self.rnd.random() * 8, self.lr, self.rnd.random(), self.pid))
        if r.outcome == "watchdog" and not failing:
            g = p + "[rank%d]:[E%s ProcessGroupNCCL.cpp:" % (self.g, self.clock.glog(ms + 600000))
            seq = 40 * s + 7
            out.append(g + "632] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d, "
                       "OpType=ALLREDUCE, NumelIn=%d, NumelOut=%d, Timeout(ms)=600000) ran for %d milliseconds "
                       "before timing out.\n" % (self.g, seq, 262144000, 262144000, 600000 + self.rnd.randrange(200)))
            out.append(g + "2168] [PG ID 0 PG GUID 0(default_pg) Rank %d]  failure detected by watchdog at work sequence "
                       "id: %d PG status: last enqueued work: %d, last completed work: %d\n"
                       % (self.g, seq, seq, seq - 1))
            out.append(g + "667] Stack trace of the failed collective not found, potentially because FlightRecorder is "
                       "disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.\n")
            out.append(g + "681] [Rank %d] Some NCCL operations have failed or timed out. Due to the asynchronous "
                       "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n"
                       % self.g)
            out.append(g + "695] [Rank %d] To avoid data inconsistency, we are taking the entire process down.\n"
                       % self.g)
        if self.lr == 0 and self.hi == r.fail_host:
            code, sig = {"oom": (1, "<N/A>"), "watchdog": (-6, "Signal 6 (SIGABRT) received by PID %d"),
                         "sigkill": (-9, "Signal 9 (SIGKILL) received by PID %d")}[r.outcome]
            fpid = self.pid + r.fail_local
            head = p + "[%s] torch.distributed.elastic.multiprocessing.api: " % self.clock.ds(ms + 601000)
            for lr in range(r.nranks):
                if lr != r.fail_local:
                    out.append(head + "[WARNING] Sending process %d closing signal SIGTERM\n" % (self.pid + lr))
            out.append(head + "[ERROR] failed (exitcode: %d) local_rank: %d (pid: %d) of binary: /usr/bin/python3\n"
                       % (code, r.fail_local, fpid))
            out.append(p + "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n")
            for line in ("=" * 60, "train.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
                         "Root Cause (first observed failure):", "[0]:",
                         "  time      : %s" % self.clock.torchrun(ms + 601000),
                         "  host      : %s" % self.host,
                         "  rank      : %d (local_rank: %d)" % (self.hi * r.nranks + r.fail_local, r.fail_local),
                         "  exitcode  : %d (pid: %d)" % (code, fpid),
                         "  error_file: <N/A>",
                         "  traceback : %s" % (sig % fpid if "%d" in sig else
                                                "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"),
                         "=" * 60):
                out.append(p + line + "\n")
        return "".join(out)


def file_chunks(run, hi, local_ranks, prefix):
    """The text of one file, in pieces: the ranks' set-ups, then step by step."""
    texts = [RankText(run, hi, lr, prefix) for lr in local_ranks]
    yield "".join(t.init() for t in texts)
    for s in range(1, run.steps + 1):
        yield "".join(t.step(s) for t in texts)
    yield "".join(t.tail(run.steps) for t in texts)


class Pipe:
    """A file written through `zstd` or `gzip` (or directly when plain)."""

    CMD = {"zst": ["zstd", "-q", "-3", "-c"], "gz": ["gzip", "-6", "-n", "-c"]}

    def __init__(self, path, kind):
        self.f = open(path, "wb")
        self.proc = None
        if kind in self.CMD:
            self.proc = subprocess.Popen(self.CMD[kind], stdin=subprocess.PIPE, stdout=self.f)
            self.out = self.proc.stdin
        else:
            self.out = self.f

    def write(self, b):
        self.out.write(b)

    def close(self):
        if self.proc:
            self.proc.stdin.close()
            if self.proc.wait() != 0:
                sys.exit("gen-archive: compressor failed")
        self.f.close()


def write_run(run, outdir, stats):
    """Writes one run in its container; returns nothing, counts into stats."""
    c = run.container
    members = []
    for rel, hi, lrs in run.files():
        prefix = run.hosts[hi] + ": " if run.layout == "host" else ""
        members.append((rel, file_chunks(run, hi, lrs, prefix)))
    if c in ("plain", "zst", "gz"):
        for rel, chunks in members:
            path = os.path.join(outdir, run.name, rel) + ("" if c == "plain" else "." + c)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            out = Pipe(path, c)
            for ch in chunks:
                b = ch.encode()
                stats["bytes"] += len(b)
                stats["lines"] += b.count(b"\n")
                out.write(b)
            out.close()
            stats["files"] += 1
        return
    mtime = run.t0_ms // 1000
    if c == "zip":
        zpath = os.path.join(outdir, run.name + ".zip")
        with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
            for rel, chunks in members:
                b = "".join(chunks).encode()
                stats["bytes"] += len(b)
                stats["lines"] += b.count(b"\n")
                zi = zipfile.ZipInfo(run.name + "/" + rel, time.gmtime(mtime)[:6])
                zi.compress_type = zipfile.ZIP_DEFLATED
                zi.external_attr = 0o644 << 16
                z.writestr(zi, b, compresslevel=6)
        stats["files"] += 1
        return
    out = Pipe(os.path.join(outdir, run.name + "." + c), c.split(".")[1])
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.GNU_FORMAT) as tar:
        for rel, chunks in members:
            b = "".join(chunks).encode()
            stats["bytes"] += len(b)
            stats["lines"] += b.count(b"\n")
            ti = tarfile.TarInfo(run.name + "/" + rel)
            ti.size, ti.mtime, ti.mode, ti.uname, ti.gname = len(b), mtime, 0o644, "", ""
            tar.addfile(ti, io.BytesIO(b))
    out.close()
    stats["files"] += 1


def one_run(job):
    """Writes run i of the archive; its counts (runs are independent: any order, any process)."""
    a, i = job
    st = {"runs": 1, "files": 0, "bytes": 0, "lines": 0}
    run = Run(a, i)
    run.plan_steps(a.size / a.runs / (a.hosts * a.ranks))
    write_run(run, a.outdir, st)
    return st


def write_single(a, stats):
    """One run as one pdsh-prefixed file, hosts interleaved step by step."""
    run = Run(a, 0)
    run.outcome = "ok"
    run.plan_steps(a.size / run.world)
    kind = a.single.rsplit(".", 1)[-1] if a.single.endswith((".zst", ".gz")) else "plain"
    out = Pipe(a.single, kind)
    gens = [file_chunks(run, hi, range(run.nranks), h + ": ") for hi, h in enumerate(run.hosts)]
    for pieces in zip(*gens):
        b = "".join(pieces).encode()
        stats["bytes"] += len(b)
        stats["lines"] += b.count(b"\n")
        out.write(b)
    out.close()
    stats["files"] = 1
    stats["runs"] = 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--single", metavar="FILE", help="one run as one pdsh-prefixed file (.zst/.gz compress it)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--ranks", type=int, default=8, help="ranks per host")
    ap.add_argument("--size", default="100M", help="total decompressed bytes (K, M, G: powers of 1000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="runs written in parallel (default: all cores; output is the same)")
    ap.add_argument("--containers", default=",".join(CONTAINERS),
                    help="comma-separated subset of " + ",".join(CONTAINERS))
    a = ap.parse_args()
    a.size = parse_size(a.size)
    a.containers = a.containers.split(",")
    bad = [c for c in a.containers if c not in CONTAINERS]
    if bad or not (a.outdir or a.single) or a.runs < 1 or a.hosts < 1 or a.ranks < 1:
        ap.error("give OUTDIR or --single FILE; containers from " + ",".join(CONTAINERS))
    t0 = time.time()
    stats = {"runs": 0, "files": 0, "bytes": 0, "lines": 0}
    if a.single:
        write_single(a, stats)
    else:
        os.makedirs(a.outdir, exist_ok=True)
        jobs = [(a, i) for i in range(a.runs)]
        if a.jobs > 1 and a.runs > 1:
            with multiprocessing.Pool(a.jobs) as pool:
                done = pool.imap_unordered(one_run, jobs, chunksize=1)
                for st in done:
                    for k in stats:
                        stats[k] += st[k]
        else:
            for job in jobs:
                for k, v in one_run(job).items():
                    stats[k] += v
    print("gen-archive: %d runs, %d files, %d bytes of text, %d lines in %.1f s"
          % (stats["runs"], stats["files"], stats["bytes"], stats["lines"], time.time() - t0), file=sys.stderr)


if __name__ == "__main__":
    main()
