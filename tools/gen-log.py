#!/usr/bin/env python3
"""Deterministic synthetic DeepSpeed + NCCL log for benchmarks.

  tools/gen-log.py SIZE_MB OUT [--hosts N] [--seed S]

Writes about SIZE_MB megabytes of pdsh-prefixed lines in the real formats: NCCL
INFO lines (the bulk, as in real multi-node logs), DeepSpeed step/throughput
lines, HF loss dicts, tqdm bars with lone \\r, and a three-line see_memory_usage
report every 50 steps. The memory reports' Max_MA values are a function of the
step, so their maximum is known: it is printed on stderr at the end.
"""
import argparse
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("size_mb", type=float)
    ap.add_argument("out")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    target = int(a.size_mb * 1e6)
    hosts = [f"gpu{i:03d}" for i in range(a.hosts)]
    written = 0
    step = 0
    peak = 0.0
    sec = 0
    with open(a.out, "w", newline="") as f:
        while written < target:
            step += 1
            sec += 1
            ts = f"2024-07-20 {(sec // 3600) % 24:02d}:{(sec // 60) % 60:02d}:{sec % 60:02d},{rnd.randrange(1000):03d}"
            chunk = []
            for h in hosts:
                pid = 1000 + hosts.index(h)
                for ch in range(4):
                    chunk.append(f"{h}: {h}:{pid}:{pid + 7} [{ch}] NCCL INFO Channel {ch:02d}/0 : {ch} -> {ch + 1} via P2P/IPC/read\n")
                chunk.append(f"{h}: [{ts}] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, lr=[9.99e-06], mom=[(0.9, 0.999)]\n")
                chunk.append(f"{h}: [{ts}] [INFO] [timer.py:260:stop] epoch=0/micro_step={step}/global_step={step}, RunningAvgSamplesPerSec={40 + rnd.random():.4f}, CurrSamplesPerSec={40 + rnd.random():.4f}, MemAllocated=20.1GB, MaxMemAllocated=21.4GB\n")
                chunk.append(f"{h}: {{'loss': {2 - step * 1e-6:.4f}, 'grad_norm': {rnd.random():.4f}, 'learning_rate': 9.99e-06, 'epoch': {step / 1e5:.4f}}}\n")
                if step % 50 == 0:
                    mx = round(10 + (step * 7 + hosts.index(h) * 13) % 1000 / 100, 2)
                    peak = max(peak, mx)
                    chunk.append(f"{h}: [{ts}] [INFO] [utils.py:800:see_memory_usage] After step {step}\n")
                    chunk.append(f"{h}: [{ts}] [INFO] [utils.py:801:see_memory_usage] MA 9.5 GB         Max_MA {mx} GB         CA 22.1 GB         Max_CA 23 GB \n")
                    chunk.append(f"{h}: [{ts}] [INFO] [utils.py:808:see_memory_usage] CPU Virtual Memory:  used = 164.03 GB, percent = 16.3%\n")
            if step % 100 == 0:
                chunk.append(" 10%|#         | 50/500 [00:10<01:30,  5.00it/s]\r 20%|##        | 100/500 [00:20<01:20,  5.00it/s]\n")
            s = "".join(chunk)
            f.write(s)
            written += len(s)
    import sys
    print(f"wrote {written} bytes, {step} steps, peak Max_MA {peak} GB", file=sys.stderr)


if __name__ == "__main__":
    main()
