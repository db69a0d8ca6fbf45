#!/usr/bin/env python3
"""riva-asrlib-decoder (NVIDIA's CUDA WFST decoder, Kaldi cudadecoder's engine) on a folder that
`ctxbench export --kind tlg-normal --format npy` wrote: the same TLG, the same log-probs (times
the export's acoustic scale: riva's search applies none), the same beam, lattice beam and
max-active; the log-probs put on the GPU before the clock starts (riva's condition: an acoustic
model's output stays there). Writes one line per utterance, `utt word word ...`, and the timing
as `key=value` lines. Runs on a GPU machine (torch, numpy; the riva wheel from the GPU bundle).

Usage: peer_riva.py EXPORT_DIR --hyp HYP.txt --timing TIMING.txt [--beam 15] [--lattice-beam 8]
       [--max-active 10000] [--batch 512] [--copies 1]
`--copies K` decodes the set K times over as K·N utterances in flight (riva's best case).
"""
import argparse
import multiprocessing
import pathlib
import sys
import time

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

import numpy as np
import torch
from riva.asrlib.decoder.python_decoder import (
    BatchedMappedDecoderCuda,
    BatchedMappedDecoderCudaConfig,
)


def best_words(r):
    """The word ids of riva's best path (decode_nbest gives a list of n-best results per
    utterance; the first is the best)."""
    if isinstance(r, (list, tuple)):
        r = r[0]
    return list(r.words)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("export", type=pathlib.Path)
    ap.add_argument("--hyp", type=pathlib.Path, required=True)
    ap.add_argument("--timing", type=pathlib.Path, required=True)
    ap.add_argument("--beam", type=float, default=15.0)
    ap.add_argument("--lattice-beam", type=float, default=8.0)
    ap.add_argument("--max-active", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--copies", type=int, default=1)
    a = ap.parse_args()

    reg = tomllib.loads((a.export / "datasets.toml").read_text())
    name, entry = next(iter(reg.items()))
    scale = float(entry.get("acoustic_scale", 1.0))
    shift = float(entry.get("frame_shift_s", 0.04))
    graph = a.export / entry["graph"]
    words_txt = a.export / entry["words"]
    words = {}
    for line in words_txt.read_text().splitlines():
        w, i = line.split()
        words[int(i)] = w
    scores_dir = a.export / entry["scores"]
    utts = sorted(p.stem for p in scores_dir.glob("*.npy"))
    if not utts:
        sys.exit(f"{scores_dir}: no .npy score files")
    mats = [np.load(scores_dir / f"{u}.npy").astype(np.float32) * scale for u in utts]
    cols = mats[0].shape[1]
    audio_s = sum(m.shape[0] for m in mats) * shift

    config = BatchedMappedDecoderCudaConfig()
    config.n_input_per_chunk = 50
    config.online_opts.decoder_opts.default_beam = a.beam
    config.online_opts.decoder_opts.lattice_beam = a.lattice_beam
    config.online_opts.decoder_opts.max_active = a.max_active
    config.online_opts.determinize_lattice = True
    config.online_opts.max_batch_size = a.batch
    config.online_opts.num_channels = a.batch * 2
    config.online_opts.frame_shift_seconds = shift
    config.online_opts.num_post_processing_worker_threads = multiprocessing.cpu_count()
    config.online_opts.num_decoder_copy_threads = 4
    decoder = BatchedMappedDecoderCuda(config, str(graph), str(words_txt), cols)

    # Every batch on the device before the clock starts: [B, T, V] float32 CUDA, int64 CPU
    # lengths.
    order = list(range(len(mats))) * a.copies
    batches = []
    t0 = time.time()
    for s in range(0, len(order), a.batch):
        idx = order[s : s + a.batch]
        seqs = [torch.from_numpy(mats[i]) for i in idx]
        padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True).cuda()
        lens = torch.tensor([mats[i].shape[0] for i in idx], dtype=torch.long)
        batches.append((idx, padded, lens))
    torch.cuda.synchronize()
    upload_s = time.time() - t0
    # Warm-up (graph upload, allocations) on the first batch, untimed.
    decoder.decode_nbest(batches[0][1], batches[0][2])
    torch.cuda.synchronize()
    t0 = time.time()
    results = [decoder.decode_nbest(p, l) for _, p, l in batches]
    torch.cuda.synchronize()
    decode_s = time.time() - t0

    best = {}
    for (idx, _, _), res in zip(batches, results):
        for i, r in zip(idx, res):
            best.setdefault(i, best_words(r))
    with open(a.hyp, "w") as f:
        for i, u in enumerate(utts):
            f.write(" ".join([u] + [words.get(w, f"#{w}") for w in best[i]]) + "\n")
    with open(a.timing, "w") as f:
        f.write(f"dataset={name}\nutterances={len(utts) * a.copies}\n")
        f.write(f"audio_s={audio_s * a.copies:.3f}\ndecode_s={decode_s:.4f}\n")
        f.write(f"rtfx={audio_s * a.copies / decode_s:.1f}\nupload_s={upload_s:.4f}\n")
        f.write(f"beam={a.beam}\nlattice_beam={a.lattice_beam}\nmax_active={a.max_active}\n")
        f.write(f"batch={a.batch}\ncopies={a.copies}\nacoustic_scale={scale}\n")
    print(f"riva: {len(utts) * a.copies} utterances, {audio_s * a.copies:.0f} s audio, "
          f"RTFx {audio_s * a.copies / decode_s:.0f} (scores resident; upload {upload_s:.2f} s)")


if __name__ == "__main__":
    main()
