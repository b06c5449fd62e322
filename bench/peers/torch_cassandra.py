"""The PyTorch peer: a `DataLoader` over a map-style `Dataset` that fetches each sample by
UUID from cassette's Cassandra tables with the Python cassandra-driver, decodes the JPEG with
Pillow and makes the training tensor, the way people feed PyTorch from a store today.

    python bench/peers/torch_cassandra.py --store cassandra://127.0.0.1:9042/KS --dataset fm \
        [--tensor fm|imagenet] [--workers N] [--batch B] [--in-order|--no-in-order] \
        [--threads T] [--step-ms S] [--limit N] [--ids FILE] [--seed S] [--dump FILE] [--json]

Two designs:
  --threads 0 (default)  PyTorch's own: each worker process fetches a batch's samples one after
                         another, one blocking query each (the `Dataset.__getitem__` contract).
  --threads T            ConcurrentDataLoader's "threaded" fetcher (Svogor et al., the paper in
                         shared/papers/concurrent-dataloader.txt, §"Threaded implementation"):
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
import json
import math
import os
import random
import resource
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, unquote

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

# Fashion-MNIST's pixel mean and standard deviation on a 0..1 scale, as cassette's training uses
# them (src/dataset/fashion_mnist.ts FASHION_MNIST_MEAN / _STD).
FM_MEAN, FM_STD = 0.2860, 0.3530
# ImageNet's per-channel figures, as train.ts uses for colour sets.
IN_MEAN, IN_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
IN_SIZE = 224


# --- the store's address ------------------------------------------------------------------


def parse_address(address: str) -> dict:
    """cassandra://[user:pass@]host[,host…][:port]/KEYSPACE[?dc=…], as cassette reads it
    (src/source/address.ts); TLS options are refused rather than silently ignored."""
    prefix = "cassandra://"
    if not address.startswith(prefix):
        raise SystemExit(f"Cannot use store address '{address}' as this peer reads only cassandra:// addresses")
    rest, _, query = address[len(prefix):].partition("?")
    authority, slash, keyspace = rest.partition("/")
    if not slash or not keyspace:
        raise SystemExit(f"Cannot use store address '{address}' as it has no keyspace (cassandra://HOST/KEYSPACE)")
    user = password = None
    if "@" in authority:
        cred, authority = authority.rsplit("@", 1)
        user, _, password = cred.partition(":")
        user, password = unquote(user), unquote(password)
    port = 9042
    host_part, colon, maybe_port = authority.rpartition(":")
    if colon and maybe_port.isdigit():
        authority, port = host_part, int(maybe_port)
    options = {k: v[-1] for k, v in parse_qs(query).items()}
    unsupported = sorted(set(options) & {"tls", "ca", "cert", "key"})
    if unsupported:
        raise SystemExit(f"Cannot use store address options {unsupported} in this peer: it connects without TLS")
    return {
        "hosts": authority.split(","), "port": port, "keyspace": keyspace,
        "user": user, "password": password, "dc": options.get("dc", "datacenter1"),
    }


def table_prefix(dataset: str) -> str:
    """cassette's table prefix for a dataset name (src/dataset/spec.ts tablePrefix)."""
    return "ds_" + "".join(c if c.isalnum() and c.isascii() else "_" for c in dataset.lower())


def connect(addr: dict):
    """A cluster and session for one process: token-aware over the local DC, at LOCAL_ONE, as
    cassette reads by default."""
    from cassandra import ConsistencyLevel
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=addr["dc"])),
        consistency_level=ConsistencyLevel.LOCAL_ONE,
        request_timeout=30,
    )
    auth = PlainTextAuthProvider(addr["user"], addr["password"]) if addr["user"] else None
    cluster = Cluster(
        addr["hosts"], port=addr["port"], auth_provider=auth, protocol_version=4,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
    )
    return cluster, cluster.connect()


def list_ids(addr: dict, dataset: str) -> list[str]:
    """Every id of the dataset, from metadata_by_nat (what `cassette read` scans)."""
    cluster, session = connect(addr)
    try:
        rows = session.execute(f"SELECT id FROM {addr['keyspace']}.{table_prefix(dataset)}_metadata_by_nat")
        return [str(r.id) for r in rows]  # the driver pages through the result as it is iterated
    finally:
        cluster.shutdown()


# --- the training tensor --------------------------------------------------------------------


def fm_tensor(img: Image.Image) -> torch.Tensor:
    """1×28×28 float32: grey, (x/255 − mean) / std."""
    if img.mode != "L":
        img = img.convert("L")
    if img.size != (28, 28):
        img = img.resize((28, 28), Image.BILINEAR)
    x = torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).float().div_(255.0)
    return x.sub_(FM_MEAN).div_(FM_STD).unsqueeze_(0)


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
        table = f"{self.addr['keyspace']}.{table_prefix(self.dataset)}_data_by_uuid"
        self._stmt = self._session.prepare(f"SELECT label, data FROM {table} WHERE id = ?")
        self._stmt.is_idempotent = True
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


def cpu_seconds() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # workers count once they are joined
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, help="cassandra://[user:pass@]host[:port]/KEYSPACE")
    p.add_argument("--dataset", required=True)
    p.add_argument("--tensor", choices=["fm", "imagenet"], default="fm",
                   help="fm: 1×28×28 grey, normalized; imagenet: 3×224×224 random-resized-crop + flip + normalize")
    p.add_argument("--ids", help="a file of ids, one a line (default: the dataset's metadata_by_nat)")
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes (default 2: one per core here)")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--in-order", action=argparse.BooleanOptionalAction, default=True,
                   help="DataLoader's in_order (default on, PyTorch's default)")
    p.add_argument("--threads", type=int, default=0, help="fetch a batch's samples on T threads per worker (default 0: one at a time)")
    p.add_argument("--prefetch-factor", type=int, default=None, help="batches each worker works ahead (PyTorch's default 2)")
    p.add_argument("--step-ms", type=float, default=0.0, help="the consumer sleeps S ms per batch (a training step)")
    p.add_argument("--limit", type=int, default=None, help="read the first N ids of the shuffled order")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dump", metavar="FILE", help="write the first batch's tensor as a NumPy .npy file (float32); its ids and labels go in the report")
    p.add_argument("--json", action="store_true", help="print only the JSON line")
    a = p.parse_args(argv)
    if a.workers < 0 or a.batch < 1 or a.threads < 0:
        p.error("--workers and --threads must be ≥ 0 and --batch ≥ 1")

    torch.set_num_threads(1)  # the work is per sample; two cores are the workers'
    if a.tensor == "imagenet":
        import torchvision.transforms  # noqa: F401  imported once here, so forked workers inherit it
    addr = parse_address(a.store)
    t_list = time.perf_counter()
    if a.ids:
        with open(a.ids) as f:
            ids = [line.strip() for line in f if line.strip()]
    else:
        ids = list_ids(addr, a.dataset)
    list_s = time.perf_counter() - t_list
    if not ids:
        print(f"Cannot read dataset '{a.dataset}' as {a.store} lists no ids for it", file=sys.stderr)
        return 1
    ids.sort()  # the store's scan order is the token order; start from one that does not depend on it
    random.Random(a.seed).shuffle(ids)
    if a.limit is not None:
        ids = ids[: a.limit]

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

    samples = nbytes = batches = 0
    shape, first_n = None, 0
    gaps = []
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    last = t0
    it = iter(loader)
    dumped = None
    for images, labels, b, batch_ids in it:
        now = time.perf_counter()
        gaps.append((now - last) * 1000)
        samples += len(labels)
        nbytes += b
        batches += 1
        if shape is None:
            shape, first_n = list(images.shape), len(labels)
            if a.dump:
                # The first batch as handed over, to compare with `cassette read --preprocess
                # --dump` sample by sample (match on ids: the two need not batch alike).
                np.save(a.dump, images.numpy())
                dumped = {"file": a.dump, "ids": batch_ids, "labels": labels.tolist()}
        if a.step_ms > 0:
            time.sleep(a.step_ms / 1000)
        last = time.perf_counter()
    seconds = last - t0
    del it  # joins the workers, so that their CPU time is counted
    if a.workers == 0:
        ds.close()
    cpu = cpu_seconds() - cpu0

    first_ms = gaps[0] if gaps else 0.0
    gaps.sort()
    q = lambda f: gaps[min(len(gaps) - 1, math.floor(f * len(gaps)))] if gaps else 0.0
    report = {
        "peer": "torch-threaded" if a.threads else "torch",
        "store": "cassandra://" + a.store.split("@")[-1] if "@" in a.store else a.store,  # no password
        "dataset": a.dataset, "tensor": a.tensor,
        "samples": samples, "bytes": nbytes, "seconds": seconds,
        "samplesPerSec": samples / seconds if seconds > 0 else 0.0,
        "mbPerSec": nbytes / 1e6 / seconds if seconds > 0 else 0.0,
        "batchMs": {"p50": q(0.5), "p99": q(0.99), "max": gaps[-1] if gaps else 0.0},
        # The first batch waits for the workers to start and connect; on a short run that is
        # most of `seconds`, so the rate after it is given too.
        "firstBatchMs": first_ms,
        "steadySamplesPerSec": (samples - first_n) / (seconds - first_ms / 1000) if batches > 1 else 0.0,
        "batches": batches, "shape": shape, "cpuSeconds": cpu,
        "workers": a.workers, "threads": a.threads, "batch": a.batch, "inOrder": a.in_order,
        "stepMs": a.step_ms, "listSeconds": list_s,
        **({"dump": dumped} if dumped else {}),
        "torch": torch.__version__, "python": "%d.%d.%d" % sys.version_info[:3],
    }
    if not a.json:
        print(f"read {samples} samples, {nbytes / 1e6:.1f} MB in {seconds:.2f} s: {report['samplesPerSec']:.0f} samples/s, "
              f"batch time p50 {report['batchMs']['p50']:.1f} ms, p99 {report['batchMs']['p99']:.1f} ms; CPU {cpu:.2f} s", file=sys.stderr)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    from cassandra.cluster import NoHostAvailable

    try:
        sys.exit(main(sys.argv[1:]))
    except NoHostAvailable as e:
        # One line that names the nodes and why each refused, not the driver's traceback.
        why = "; ".join(f"{host}: {err}" for host, err in e.errors.items()) or str(e)
        print(f"Cannot read from the store as no node answered: {why}", file=sys.stderr)
        sys.exit(1)
