#!/usr/bin/env python3
"""Writes the small sample archive bundled in tests/data/archive (deterministic).

Three runs in the shapes a cluster archive has: a two-host ZeRO-3 run with one
pdsh-prefixed file per host, a single-node run with one file per rank, and a
plain log directly under the root. The peaks are known by construction:
  llama7b-zero3  max Max_MA 21.37 GB (gpu010), gpt2-zero2 3.25 GB, bert-baseline 1.5 GB
Run from the repository root: python3 tools/make-sample-archive.py
"""
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "archive")


def ds(ts, lvl, src, msg, rank=None):
    r = f"[Rank {rank}] " if rank is not None else ""
    return f"[{ts}] [{lvl}] [{src}] {r}{msg}"


def mem(ts, label, ma, max_ma, ca, max_ca, used, pct, line=800):
    return [
        ds(ts, "INFO", f"utils.py:{line}:see_memory_usage", label),
        ds(ts, "INFO", f"utils.py:{line + 1}:see_memory_usage",
           f"MA {ma} GB         Max_MA {max_ma} GB         CA {ca} GB         Max_CA {max_ca} GB "),
        ds(ts, "INFO", f"utils.py:{line + 8}:see_memory_usage",
           f"CPU Virtual Memory:  used = {used} GB, percent = {pct}%"),
    ]


def host_log(host, peaks):
    out = [
        f"{host}: [2024-07-20 21:29:58,101] [INFO] [real_accelerator.py:203:get_accelerator] Setting ds_accelerator to cuda (auto detect)",
        f"{host}: Time to load cpu_adam op: 2.61 seconds",
        f"{host}: {host}:1187:1187 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.{9 if host == 'gpu009' else 10}<0>",
        f"{host}: {host}:1187:1187 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.9<0>",
        f"{host}: " + ds("2024-07-20 21:30:05,202", "INFO", "logging.py:96:log_dist",
                         "DeepSpeed Basic Optimizer = DeepSpeedCPUAdam", 0),
    ]
    t = 5
    for label, ma, mx, ca, mca, used, pct in peaks:
        for line in mem(f"2024-07-20 21:30:{t:02d},635", label, ma, mx, ca, mca, used, pct):
            out.append(f"{host}: {line}")
        t += 7
    out += [
        f"{host}: " + ds("2024-07-20 21:31:10,004", "INFO", "logging.py:96:log_dist",
                         "step=10, skipped=0, lr=[9.9e-06], mom=[(0.9, 0.999)]", 0),
        f"{host}: " + ds("2024-07-20 21:31:10,005", "INFO", "timer.py:260:stop",
                         "epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=41.2, CurrSamplesPerSec=41.9, MemAllocated=20.1GB, MaxMemAllocated=21.37GB"),
        f"{host}: {{'loss': 1.8731, 'grad_norm': 0.912, 'learning_rate': 9.9e-06, 'epoch': 0.01}}",
    ]
    return out


def main():
    os.makedirs(os.path.join(ROOT, "llama7b-zero3"), exist_ok=True)
    os.makedirs(os.path.join(ROOT, "gpt2-zero2"), exist_ok=True)
    files = {}
    files["llama7b-zero3/gpu009.log"] = host_log("gpu009", [
        ("Stage 3 initialize beginning", "1.75", "6.54", "4.14", "7", "164.03", "16.3"),
        ("After initializing ZeRO optimizer", "12.8", "19.02", "20.5", "21", "207.16", "20.6"),
    ])
    files["llama7b-zero3/gpu010.log"] = host_log("gpu010", [
        ("Stage 3 initialize beginning", "1.75", "6.61", "4.14", "7", "160.2", "15.9"),
        ("After initializing ZeRO optimizer", "13.1", "21.37", "22.0", "23", "209.9", "20.8"),
    ])
    for rank, (peak, ma) in enumerate([("3.25", "2.9"), ("3.11", "2.8")]):
        lines = [f"[2024-08-02 09:14:0{rank},000] [INFO] [engine.py:1142:_configure_optimizer] Using DeepSpeed Optimizer param name adamw as basic optimizer"]
        lines += mem(f"2024-08-02 09:14:1{rank},250", "Before initializing optimizer states",
                     "0.81", "0.9", "0.96", "1", "17.18", "6.8", line=781)
        lines += mem(f"2024-08-02 09:14:2{rank},250", "After initializing ZeRO optimizer",
                     ma, peak, "3.5", "4", "17.2", "6.8", line=781)
        lines.append("  0%|          | 0/500 [00:00<?, ?it/s]\r 10%|#         | 50/500 [00:10<01:30,  5.00it/s]\r 20%|##        | 100/500 [00:20<01:20,  5.00it/s]")
        files[f"gpt2-zero2/rank{rank}.log"] = lines
    bert = ["11/24/2022 00:51:19 - INFO - __main__ - Training/evaluation parameters"]
    bert += mem("2022-11-24 00:51:40,100", "Engine before forward", "0.42", "1.5", "1.9", "2",
                "4.05", "31.9", line=827)
    bert += mem("2022-11-24 00:51:41,100", "Engine after backward", "0.42", "1.21", "1.9", "2",
                "4.06", "31.9", line=827)
    files["bert-baseline.log"] = bert
    for rel, lines in files.items():
        with open(os.path.join(ROOT, rel), "w", newline="") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
