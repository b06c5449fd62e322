"""What every Python peer shares: cassette's store address and table names, a cassandra-driver
session as cassette reads (token-aware, LOCAL_ONE), the ids of one epoch, the Fashion-MNIST
tensor, the common flags, and the report: one JSON line with `cassette read --json`'s field
names where a figure means the same.

The common flags (every peer takes them):
    --store cassandra://[user:pass@]host[:port]/KEYSPACE   --dataset NAME
    [--tensor fm|imagenet] [--batch B] [--step-ms S] [--limit N] [--ids FILE] [--seed S]
    [--dump FILE] [--time-limit S] [--series] [--json]
"""
from __future__ import annotations

import argparse
import json
import math
import random
import resource
import sys
import time
from urllib.parse import parse_qs, unquote

import numpy as np

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


def redact(address: str) -> str:
    """The address without its password."""
    return "cassandra://" + address.split("@")[-1] if "@" in address else address


def table_prefix(dataset: str) -> str:
    """cassette's table prefix for a dataset name (src/dataset/spec.ts tablePrefix)."""
    return "ds_" + "".join(c if c.isalnum() and c.isascii() else "_" for c in dataset.lower())


def data_table(addr: dict, dataset: str) -> str:
    return f"{addr['keyspace']}.{table_prefix(dataset)}_data_by_uuid"


def prepare_read(session, addr: dict, dataset: str):
    """The one read every peer makes: `SELECT label, data … WHERE id = ?`, prepared, idempotent
    (the driver may retry it), as cassette's source reads a sample."""
    stmt = session.prepare(f"SELECT label, data FROM {data_table(addr, dataset)} WHERE id = ?")
    stmt.is_idempotent = True
    return stmt


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


# --- flags and ids --------------------------------------------------------------------------


def add_store_args(p: argparse.ArgumentParser) -> None:
    """Where the samples come from and which: --store --dataset --ids --limit --seed."""
    p.add_argument("--store", required=True, help="cassandra://[user:pass@]host[:port]/KEYSPACE")
    p.add_argument("--dataset", required=True)
    p.add_argument("--ids", help="a file of ids, one a line (default: the dataset's metadata_by_nat)")
    p.add_argument("--limit", type=int, default=None, help="read the first N ids of the shuffled order")
    p.add_argument("--seed", type=int, default=0)


def add_run_args(p: argparse.ArgumentParser) -> None:
    """What a timed read makes and reports: --tensor --batch --step-ms --dump --time-limit --series --json."""
    p.add_argument("--tensor", choices=["fm", "imagenet"], default="fm",
                   help="fm: 1×28×28 grey, normalized; imagenet: 3×224×224 random-resized-crop + flip + normalize")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--step-ms", type=float, default=0.0, help="the consumer sleeps S ms per batch (a training step)")
    p.add_argument("--dump", metavar="FILE", help="write the first batch's tensor as a NumPy .npy file (float32); its ids and labels go in the report")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="stop taking batches once S seconds have passed and report what was read (timeLimited: true)")
    p.add_argument("--series", action="store_true", help="add batchAtMs: each batch's hand-over, in ms from the clock's start")
    p.add_argument("--json", action="store_true", help="print only the JSON line")


def add_common_args(p: argparse.ArgumentParser) -> None:
    """Every flag of a peer that reads the store itself."""
    add_store_args(p)
    add_run_args(p)


def epoch_ids(a: argparse.Namespace, addr: dict) -> tuple[list[str], float]:
    """One epoch's ids, every one once, shuffled with --seed and cut to --limit; and the
    seconds listing them took."""
    t = time.perf_counter()
    if a.ids:
        with open(a.ids) as f:
            ids = [line.strip() for line in f if line.strip()]
    else:
        ids = list_ids(addr, a.dataset)
    took = time.perf_counter() - t
    if not ids:
        raise SystemExit(f"Cannot read dataset '{a.dataset}' as {redact(a.store)} lists no ids for it")
    ids.sort()  # the store's scan order is the token order; start from one that does not depend on it
    random.Random(a.seed).shuffle(ids)
    if a.limit is not None:
        ids = ids[: a.limit]
    return ids, took


# --- the Fashion-MNIST tensor ---------------------------------------------------------------


def fm_array(img) -> np.ndarray:
    """A Pillow image as 1×28×28 float32: grey, (x/255 − mean) / std."""
    from PIL import Image

    if img.mode != "L":
        img = img.convert("L")
    if img.size != (28, 28):
        img = img.resize((28, 28), Image.BILINEAR)
    x = np.asarray(img, dtype=np.float32) / 255.0
    return ((x - FM_MEAN) / FM_STD)[None, :, :]


# --- the report -----------------------------------------------------------------------------


def cpu_seconds() -> float:
    """User + system of this process and its joined children (workers count once joined)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class Clock:
    """Counts what a consumer receives, batch by batch: call start() before the first iter(),
    batch() as each batch is handed over, stepped() after the consumer's step, and report()
    once the workers are joined. Gaps between batches exclude the consumer's step."""

    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.samples = self.bytes = self.batches = 0
        self.shape = None
        self.first_n = 0
        self.gaps: list[float] = []
        self.at: list[float] = []
        self.dumped = None
        self.time_limited = False

    def start(self) -> None:
        self.cpu0 = cpu_seconds()
        self.t0 = self.last = time.perf_counter()

    def batch(self, n: int, nbytes: int, shape, tensor=None, ids=None, labels=None) -> bool:
        """Counts a batch handed over; False once --time-limit has passed (the loop should stop:
        a bench gives a slow contender a fixed time rather than waiting for its whole epoch)."""
        now = time.perf_counter()
        self.gaps.append((now - self.last) * 1000)
        self.at.append((now - self.t0) * 1000)
        self.samples += n
        self.bytes += nbytes
        self.batches += 1
        if self.shape is None:
            self.shape, self.first_n = [int(d) for d in shape], n
            if self.a.dump and tensor is not None:
                # The first batch as handed over, to set beside `cassette read --preprocess
                # --dump` sample by sample (match on ids: the two need not batch alike).
                np.save(self.a.dump, np.asarray(tensor, dtype=np.float32))
                self.dumped = {"file": self.a.dump, "ids": list(ids or []), "labels": [int(l) for l in (labels if labels is not None else [])]}
        limit = getattr(self.a, "time_limit", None)
        self.time_limited = limit is not None and now - self.t0 >= limit
        return not self.time_limited

    def stepped(self) -> None:
        if self.a.step_ms > 0:
            time.sleep(self.a.step_ms / 1000)
        self.last = time.perf_counter()

    def stop(self) -> None:
        """Ends the timed part (the last batch handed over and its step done)."""
        self.seconds = self.last - self.t0

    def report(self, peer: str, **extra) -> dict:
        cpu = cpu_seconds() - self.cpu0
        seconds = self.seconds
        gaps = sorted(self.gaps)
        q = lambda f: gaps[min(len(gaps) - 1, math.floor(f * len(gaps)))] if gaps else 0.0
        first_ms = self.gaps[0] if self.gaps else 0.0
        a = self.a
        return {
            "peer": peer, "store": redact(a.store), "dataset": a.dataset, "tensor": a.tensor,
            "samples": self.samples, "bytes": self.bytes, "seconds": seconds,
            "samplesPerSec": self.samples / seconds if seconds > 0 else 0.0,
            "mbPerSec": self.bytes / 1e6 / seconds if seconds > 0 else 0.0,
            "batchMs": {"p50": q(0.5), "p99": q(0.99), "max": gaps[-1] if gaps else 0.0},
            # The first batch waits for the workers to start and connect; on a short run that
            # is most of `seconds`, so the rate after it is given too.
            "firstBatchMs": first_ms,
            "steadySamplesPerSec": (self.samples - self.first_n) / (seconds - first_ms / 1000) if self.batches > 1 else 0.0,
            "batches": self.batches, "shape": self.shape, "cpuSeconds": cpu,
            "batch": a.batch, "stepMs": a.step_ms, "timeLimited": self.time_limited,
            **({"dump": self.dumped} if self.dumped else {}),
            **({"batchAtMs": [round(t, 2) for t in self.at]} if a.series else {}),
            "python": "%d.%d.%d" % sys.version_info[:3],
            **extra,
        }


def emit(report: dict, json_only: bool) -> None:
    if not json_only:
        print(f"read {report['samples']} samples, {report['bytes'] / 1e6:.1f} MB in {report['seconds']:.2f} s: "
              f"{report['samplesPerSec']:.0f} samples/s, batch time p50 {report['batchMs']['p50']:.1f} ms, "
              f"p99 {report['batchMs']['p99']:.1f} ms; CPU {report['cpuSeconds']:.2f} s", file=sys.stderr)
    print(json.dumps(report))


def run_main(main) -> None:
    """Runs a peer's main, turning the driver's NoHostAvailable into one line that names the
    nodes and why each refused, not a traceback."""
    from cassandra.cluster import NoHostAvailable

    try:
        sys.exit(main(sys.argv[1:]))
    except NoHostAvailable as e:
        why = "; ".join(f"{host}: {err}" for host, err in e.errors.items()) or str(e)
        print(f"Cannot read from the store as no node answered: {why}", file=sys.stderr)
        sys.exit(1)
