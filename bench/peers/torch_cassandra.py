"""The PyTorch peer: a `DataLoader` over a map-style `Dataset` that fetches each sample by
UUID from cassette's Cassandra tables with the Python cassandra-driver, decodes the JPEG with
Pillow and makes the training tensor, the way people feed PyTorch from a store today.

    python bench/peers/torch_cassandra.py --store cassandra://127.0.0.1:9042/KS --dataset fm \
        [--tensor fm|imagenet] [--workers N] [--batch B] [--in-order|--no-in-order] \
        [--threads T] [--step-ms S] [--limit N] [--ids FILE] [--seed S] [--dump FILE] [--series] [--json]

Two designs:
  --threads 0 (default)  PyTorch's own: each worker process fetches a batch's samples one after
                         another, one blocking query each (the `Dataset.__getitem__` contract).
  --threads T            ConcurrentDataLoader's "threaded" fetcher (Svogor et al., "Profiling and
                         Improving the PyTorch Dataloader for high-latency Storage", arXiv:2211.04908,
                         §"Threaded implementation"):
                         each worker receives a batch's indices and fetches them on a pool of T
                         threads at once, then puts the batch back in the order asked. Here the
                         hook is `Dataset.__getitems__`, which DataLoader's fetcher calls with a
                         batch's indices when a dataset has it; the paper patched the fetcher.
                         Its "batch pool" (several batches taken apart at once) is not done.

The ids come from the dataset's metadata_by_nat table (as `cassette read` lists them) or from
--ids FILE (one UUID a line). They are read once in a shuffled order (--seed), every sample
once, as `cassette read` does for one epoch.

Each worker opens its own cassandra-driver session on first use, after the fork: a session's
event loop thread does not survive a fork, and the main process closes the one it listed the
ids with before the workers start.

Output: one JSON line, with the field names of `cassette read --json` where a figure means the
same: samples, bytes (JPEG bytes read), seconds (from the first `iter()` to the last batch,
worker start-up included; `cassette read` starts its clock once its store is open),
samplesPerSec, mbPerSec (JPEG MB per second), batchMs {p50, p99, max} (time between batches as
the consumer sees them, its step excluded), and the peer's own: firstBatchMs (worker start-up
and connecting included) and steadySamplesPerSec (the samples after the first batch over the
time after it), shape (the batch tensor's),
cpuSeconds (user + system of this process and its workers: resource.getrusage of self and
children once the workers are joined), and the settings.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from common import IN_MEAN, IN_SIZE, IN_STD, Clock, add_common_args, connect, emit, epoch_ids, fm_array, parse_address, prepare_read, run_main


# --- the training tensor --------------------------------------------------------------------


def fm_tensor(img: Image.Image) -> torch.Tensor:
    """1×28×28 float32: grey, (x/255 − mean) / std."""
    return torch.from_numpy(fm_array(img))


def imagenet_transform():
    """3×224×224 float32: RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize,
    with torchvision's transforms, as an ImageNet training script has it."""
    from torchvision import transforms

    chain = transforms.Compose([
        transforms.RandomResizedCrop(IN_SIZE),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(IN_MEAN, IN_STD),
    ])

    def run(img: Image.Image) -> torch.Tensor:
        return chain(img.convert("RGB") if img.mode != "RGB" else img)

    return run


# --- the dataset ----------------------------------------------------------------------------


class CassandraSamples(Dataset):
    """Samples by UUID: `SELECT label, data FROM <p>_data_by_uuid WHERE id = ?`, one prepared
    statement per process, then decode and the tensor. Picklable until first used (workers get
    a copy without a session and open their own)."""

    def __init__(self, addr: dict, dataset: str, ids: list[str], tensor: str):
        self.addr, self.dataset, self.ids, self.tensor = addr, dataset, ids, tensor
        self._pid = None
        self._cluster = self._session = self._stmt = self._transform = None

    def __len__(self) -> int:
        return len(self.ids)

    def _open(self) -> None:
        # Keyed by pid: a copy that crossed a fork must not touch the parent's session.
        if self._pid == os.getpid():
            return
        self._cluster, self._session = connect(self.addr)
        self._stmt = prepare_read(self._session, self.addr, self.dataset)
        self._transform = fm_tensor if self.tensor == "fm" else imagenet_transform()
        self._pid = os.getpid()

    def close(self) -> None:
        if self._cluster is not None and self._pid == os.getpid():
            self._cluster.shutdown()
        self._pid = self._cluster = self._session = None

    def _one(self, index: int):
        sample_id = self.ids[index]
        row = self._session.execute(self._stmt, [uuid.UUID(sample_id)]).one()
        if row is None:
            raise KeyError(f"Cannot read sample {sample_id} as the store has no row for it")
        data = row.data
        # A full-size decode (no draft mode): cassette's decoder does the whole image too.
        img = Image.open(io.BytesIO(data))
        return self._transform(img), row.label, len(data), sample_id

    def __getitem__(self, index: int):
        self._open()
        return self._one(index)


class ThreadedCassandraSamples(CassandraSamples):
    """ConcurrentDataLoader's threaded fetcher: a batch's samples on a pool of threads."""

    def __init__(self, addr: dict, dataset: str, ids: list[str], tensor: str, threads: int):
        super().__init__(addr, dataset, ids, tensor)
        self.threads = threads
        self._pool = None

    def _open(self) -> None:
        if self._pid == os.getpid():
            return
        super()._open()
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="fetch")

    def __getitems__(self, indices: list[int]):
        self._open()
        # map() keeps the order asked, whatever order the answers come in.
        return list(self._pool.map(self._one, indices))

    def close(self) -> None:
        if self._pool is not None and self._pid == os.getpid():
            self._pool.shutdown()
        self._pool = None
        super().close()


def collate(items):
    images = torch.stack([i[0] for i in items])
    labels = torch.tensor([i[1] for i in items], dtype=torch.int64)
    nbytes = sum(i[2] for i in items)
    return images, labels, nbytes, [i[3] for i in items]


def worker_init(_worker_id: int) -> None:
    # Open the session as the worker starts, not inside the first timed fetch; torch already
    # limits each worker to one intra-op thread.
    info = torch.utils.data.get_worker_info()
    info.dataset._open()


# --- the run --------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p)
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes (default 2: one per core here)")
    p.add_argument("--in-order", action=argparse.BooleanOptionalAction, default=True,
                   help="DataLoader's in_order (default on, PyTorch's default)")
    p.add_argument("--threads", type=int, default=0, help="fetch a batch's samples on T threads per worker (default 0: one at a time)")
    p.add_argument("--prefetch-factor", type=int, default=None, help="batches each worker works ahead (PyTorch's default 2)")
    a = p.parse_args(argv)
    if a.workers < 0 or a.batch < 1 or a.threads < 0:
        p.error("--workers and --threads must be ≥ 0 and --batch ≥ 1")

    torch.set_num_threads(1)  # the work is per sample; two cores are the workers'
    if a.tensor == "imagenet":
        import torchvision.transforms  # noqa: F401  imported once here, so forked workers inherit it
    addr = parse_address(a.store)
    ids, list_s = epoch_ids(a, addr)

    ds = (ThreadedCassandraSamples(addr, a.dataset, ids, a.tensor, a.threads) if a.threads > 0
          else CassandraSamples(addr, a.dataset, ids, a.tensor))
    extra = {}
    if a.workers > 0:
        extra = {"worker_init_fn": worker_init, "persistent_workers": False, "multiprocessing_context": "fork"}
        if a.prefetch_factor is not None:
            extra["prefetch_factor"] = a.prefetch_factor
    if not a.in_order and a.workers > 0:
        extra["in_order"] = False
    loader = DataLoader(ds, batch_size=a.batch, shuffle=False, num_workers=a.workers, collate_fn=collate, **extra)

    clock = Clock(a)
    clock.start()
    it = iter(loader)
    for images, labels, nbytes, batch_ids in it:
        go_on = clock.batch(len(labels), nbytes, images.shape, images.numpy(), batch_ids, labels.tolist())
        clock.stepped()
        if not go_on:
            break
    clock.stop()
    del it  # joins the workers, so that their CPU time is counted
    if a.workers == 0:
        ds.close()
    emit(clock.report("torch-threaded" if a.threads else "torch",
                      workers=a.workers, threads=a.threads, inOrder=a.in_order, listSeconds=list_s,
                      torch=torch.__version__), a.json)
    return 0


if __name__ == "__main__":
    run_main(main)
