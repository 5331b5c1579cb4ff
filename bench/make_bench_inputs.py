"""Writes the inputs of the NumPy / PyTorch benchmark (bench/numpy_torch.py) into a folder.

Made by the canonical producers (Debian's python3-torch 1.13, torchvision 0.14, numpy 1.24;
run with /usr/bin/python3), never by anamnesis. About 1 GB in all: write them to a
temporary folder, never into the repository.

  resnet50.pth   torchvision resnet50() state dict, torch.save (ZIP form), 320 tensors, 98 MiB
  vit_b_16.pth   torchvision vit_b_16() state dict, torch.save (ZIP form), 152 tensors, 330 MiB
  resnet50.npz   the same state dicts, np.savez of each tensor's numpy array (stored)
  vit_b_16.npz
  big.npy        np.save of one 8192 x 8192 float32 array (256 MiB)

Weights are random (the models' own init, seeded): speed depends on shapes, not values.
"""
import os
import sys

import numpy as np
import torch
import torchvision


def state_dict(name):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)()  # random init: no download
    return model.state_dict()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_bench_inputs.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in ("resnet50", "vit_b_16"):
        sd = state_dict(name)
        torch.save(sd, os.path.join(out, f"{name}.pth"))
        # np.savez names entries "<key>.npy"; the state dict's dotted keys are valid names.
        np.savez(os.path.join(out, f"{name}.npz"), **{k: v.numpy() for k, v in sd.items()})
    rng = np.random.default_rng(0)
    np.save(os.path.join(out, "big.npy"), rng.standard_normal((8192, 8192), dtype=np.float32))
    for f in sorted(os.listdir(out)):
        print(f"{f}: {os.path.getsize(os.path.join(out, f)) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
