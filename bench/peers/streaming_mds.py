"""The MosaicML Streaming peer: the same samples written as MDS shards, served over HTTP by
nginx (through the latency proxy for an RTT), read by `StreamingDataset` into a PyTorch
`DataLoader`, the way people train from object storage with Streaming today.

    python bench/peers/streaming_mds.py write --store cassandra://127.0.0.1:9042/KS --dataset fm \
        --out DIR [--ids FILE] [--limit N] [--seed S] [--shard-bytes B] [--json]
    python bench/peers/streaming_mds.py read --remote http://HOST:PORT/BUCKET --local DIR \
        [--workers 2] [--tensor fm|imagenet] [--batch B] [--step-ms S] [--limit N] [--seed S] \
        [--dump FILE] [--series] [--json]

write: the epoch's ids (common.epoch_ids: metadata_by_nat or --ids, shuffled with --seed, cut to
  --limit), each fetched by UUID as the torch peer fetches it (`SELECT label, data FROM
  <p>_data_by_uuid WHERE id = ?`, prepared, LOCAL_ONE; here many at once, as the write is not
  timed), written with Streaming's `MDSWriter` in that order: columns id (str), label (int) and
  jpeg (bytes: the stored JPEG as it is, not decoded or re-encoded). Streaming's defaults
  otherwise: 64 MiB shards (`size_limit` 1 << 26; --shard-bytes for tests), no compression (JPEGs do not compress; a
  compressed shard is also downloaded whole and then decompressed), no hashes. Prints a JSON
  summary (samples, shards, bytes, seconds). DIR/cassette.json records the ids written: a DIR
  that already holds every shard of an index for the same ids is kept (`reused: true`), so
  benches write once.

read: `StreamingDataset(remote=…, local=…, batch_size=B, shuffle=True, shuffle_seed=--seed)`,
  Streaming's defaults otherwise (predownload 8 × batch per worker, no cache limit, py1e
  shuffle, relaxed partitions, 60 s download timeout). Shuffle is off by Streaming's default;
  a training loader shuffles, and the other peers read a shuffled epoch, so it is on. Its
  `__getitem__` decodes the JPEG with Pillow and makes the torch peer's tensor (the same
  functions: torch_cassandra.fm_tensor / imagenet_transform), batched by a torch `DataLoader`
  (--workers processes, fork, the torch peer's collate). The local cache is emptied before the
  run: every shard crosses the network, as in the first epoch of a training run on a fresh
  machine. --limit N reads N samples of the epoch through Streaming's own `epoch_size`.

How the shards travel: Streaming 0.13 has no plain http:// downloader (DOWNLOADER_MAPPINGS in
streaming/base/storage/download.py: s3, gs, oci, azure, dbfs, hf, sftp, local…), so the peer uses
its S3 downloader, the one S3 users run: `--remote http://HOST:PORT/BUCKET[/PREFIX]` becomes
`remote=s3://BUCKET/PREFIX` with `S3_ENDPOINT_URL=http://HOST:PORT` (the variable Streaming reads
for S3-compatible stores). boto3 then sends a signed `HEAD /BUCKET/KEY` and `GET /BUCKET/KEY`
(path-style: botocore does not put a bucket in the host name of an IP-address endpoint; the
AWS config this peer points boto3 at says `addressing_style = path` for any host), with ranged
GETs of 8 MiB for a shard over 8 MiB (s3transfer's multipart threshold; Streaming sets
`use_threads=False`, so one after another). nginx answers HEAD, GET and Range from the shard
folder and ignores the signature, so the fake credentials set here never matter.

Output: one JSON line (common.Clock, peer "streaming"): the torch peer's fields, plus
streaming (its version), shards and shardBytes (the shard files the run fetched into the
empty cache), distinct (how many different ids it handed over), indexSeconds
(StreamingDataset's construction: fetching index.json and setting up its shared memory; the
clock starts after it, at the first `iter()`, as the torch peer's starts after listing its
ids), workers, remote.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from urllib.parse import urlparse

from common import Clock, add_run_args, add_store_args, connect, emit, epoch_ids, parse_address, prepare_read, redact, run_main

MARKER = "cassette.json"  # beside index.json: which ids the shards hold


# --- write ----------------------------------------------------------------------------------


def ids_digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def complete(out: str, digest: str, shard_bytes: int | None) -> dict | None:
    """The earlier summary when `out` holds every shard of an index written for the same ids."""
    try:
        with open(os.path.join(out, MARKER)) as f:
            summary = json.load(f)
        with open(os.path.join(out, "index.json")) as f:
            index = json.load(f)
    except (OSError, ValueError):
        return None
    if summary.get("idsSha256") != digest or summary.get("sizeLimit") != shard_bytes:
        return None
    for shard in index["shards"]:
        raw = shard["raw_data"]
        path = os.path.join(out, raw["basename"])
        if not os.path.exists(path) or os.path.getsize(path) != raw["bytes"]:
            return None
    return summary


def write(a: argparse.Namespace) -> int:
    from cassandra.concurrent import execute_concurrent_with_args
    from streaming import MDSWriter

    addr = parse_address(a.store)
    ids, list_s = epoch_ids(a, addr)
    digest = ids_digest(ids)
    out = os.path.abspath(a.out)
    done = complete(out, digest, a.shard_bytes)
    if done is not None:
        emit_summary({**done, "reused": True}, a.json)
        return 0

    t0 = time.perf_counter()
    # A half-written folder from an earlier run would mix shards: start from an empty one.
    shutil.rmtree(out, ignore_errors=True)
    cluster, session = connect(addr)
    samples = nbytes = 0
    try:
        stmt = prepare_read(session, addr, a.dataset)
        columns = {"id": "str", "label": "int", "jpeg": "bytes"}
        size = {"size_limit": a.shard_bytes} if a.shard_bytes else {}  # default: Streaming's 64 MiB
        with MDSWriter(out=out, columns=columns, **size) as writer:  # no compression
            step = 1024  # fetched 1024 at a time, in the epoch's order, 64 queries in flight
            for i in range(0, len(ids), step):
                chunk = ids[i: i + step]
                results = execute_concurrent_with_args(session, stmt, [(uuid.UUID(s),) for s in chunk],
                                                       concurrency=64, raise_on_first_error=True)
                for sample_id, (ok, rows) in zip(chunk, results):
                    row = rows.one()
                    if row is None:
                        raise SystemExit(f"Cannot write sample {sample_id} as the store has no row for it")
                    writer.write({"id": sample_id, "label": int(row.label), "jpeg": bytes(row.data)})
                    samples += 1
                    nbytes += len(row.data)
    finally:
        cluster.shutdown()
    with open(os.path.join(out, "index.json")) as f:
        shards = json.load(f)["shards"]
    import streaming

    summary = {
        "dataset": a.dataset, "store": redact(a.store), "out": out,
        "samples": samples, "jpegBytes": nbytes, "shards": len(shards),
        "bytes": sum(s["raw_data"]["bytes"] for s in shards),
        "seconds": time.perf_counter() - t0, "listSeconds": list_s,
        "idsSha256": digest, "sizeLimit": a.shard_bytes, "streaming": streaming.__version__,
    }
    with open(os.path.join(out, MARKER), "w") as f:
        json.dump(summary, f)
    emit_summary({**summary, "reused": False}, a.json)
    return 0


def emit_summary(summary: dict, json_only: bool) -> None:
    if not json_only:
        print(f"{'kept' if summary['reused'] else 'wrote'} {summary['samples']} samples in {summary['shards']} MDS shards, "
              f"{summary['bytes'] / 1e6:.1f} MB, at {summary['out']}", file=sys.stderr)
    print(json.dumps(summary))


# --- read -----------------------------------------------------------------------------------


def s3_remote(remote: str) -> tuple[str, str]:
    """http://HOST:PORT/BUCKET[/PREFIX] → (s3://BUCKET/PREFIX, http://HOST:PORT)."""
    u = urlparse(remote)
    if u.scheme not in ("http", "https") or not u.netloc:
        raise SystemExit(f"Cannot read shards from '{remote}' as this peer takes http://HOST:PORT/BUCKET[/PREFIX]")
    path = u.path.strip("/")
    if not path:
        raise SystemExit(f"Cannot read shards from '{remote}' as it names no bucket (http://HOST:PORT/BUCKET)")
    return f"s3://{path}", f"{u.scheme}://{u.netloc}"


def s3_environment(endpoint: str, scratch: str) -> None:
    """boto3 pointed at nginx: its endpoint, path-style addressing, fake credentials (nginx does
    not check a signature), and no ~/.aws files of the user's."""
    config = os.path.join(scratch, "aws-config")
    with open(config, "w") as f:
        f.write("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n")
    os.environ.update({
        "S3_ENDPOINT_URL": endpoint,
        "AWS_CONFIG_FILE": config,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_ACCESS_KEY_ID": "cassette-bench",
        "AWS_SECRET_ACCESS_KEY": "not-checked-by-nginx",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    })


def read(a: argparse.Namespace) -> int:
    import streaming
    import torch
    from PIL import Image
    from streaming import StreamingDataset
    from streaming.base.util import clean_stale_shared_memory
    from torch.utils.data import DataLoader

    from torch_cassandra import collate, fm_tensor, imagenet_transform

    torch.set_num_threads(1)  # as the torch peer: the work is per sample, the cores are the workers'
    if a.tensor == "imagenet":
        import torchvision.transforms  # noqa: F401  imported once here, so forked workers inherit it
    import io

    remote, endpoint = s3_remote(a.remote)
    scratch = tempfile.mkdtemp(prefix="cassette-streaming-")
    s3_environment(endpoint, scratch)
    local = os.path.abspath(a.local)
    # A cold cache: nothing of an earlier run, every shard fetched over the network.
    shutil.rmtree(local, ignore_errors=True)
    # Shared memory left by a run that was killed would make StreamingDataset refuse the folder.
    clean_stale_shared_memory()

    class Samples(StreamingDataset):
        """Streaming's dataset, each sample decoded into the training tensor (Streaming's
        documented way to transform: override __getitem__)."""

        def __init__(self, tensor: str, **kw):
            super().__init__(**kw)
            self._transform = fm_tensor if tensor == "fm" else imagenet_transform()

        def __getitem__(self, idx):
            obj = super().__getitem__(idx)
            data = obj["jpeg"]
            return self._transform(Image.open(io.BytesIO(data))), obj["label"], len(data), obj["id"]

    t = time.perf_counter()
    ds = Samples(a.tensor, remote=remote, local=local, batch_size=a.batch, shuffle=True, shuffle_seed=a.seed,
                 **({"epoch_size": a.limit} if a.limit is not None else {}))
    index_s = time.perf_counter() - t
    # Fetching index.json left an S3 client, with a kept-alive connection, in this process; the
    # DataLoader's forked workers would inherit it and share one socket, and two workers' GETs
    # on it read each other's bytes: over plain HTTP a shard silently took 8 MiB of another
    # (seen here: inet through the proxy, 2 workers). Streaming's own clean_up drops the client
    # so that each worker opens its own, as the torch peer opens its session after the fork.
    for stream in ds.streams:
        stream._downloader.clean_up()
    extra = {"persistent_workers": False, "multiprocessing_context": "fork"} if a.workers > 0 else {}
    loader = DataLoader(ds, batch_size=a.batch, num_workers=a.workers, collate_fn=collate, **extra)

    clock = Clock(a)
    clock.start()
    seen: set[str] = set()  # each sample once? Streaming pads uneven partitions; the count shows it
    it = iter(loader)
    for images, labels, nbytes, batch_ids in it:
        go_on = clock.batch(len(labels), nbytes, images.shape, images.numpy(), batch_ids, labels.tolist())
        seen.update(batch_ids)
        clock.stepped()
        if not go_on:
            break
    clock.stop()
    del it  # joins the workers, so that their CPU time is counted

    fetched = [os.path.join(local, s.raw_data.basename) for s in ds.shards]
    fetched = [p for p in fetched if os.path.exists(p)]
    report = clock.report("streaming", streaming=streaming.__version__, torch=torch.__version__,
                          workers=a.workers, remote=a.remote, indexSeconds=index_s,
                          shards=len(fetched), shardBytes=sum(os.path.getsize(p) for p in fetched),
                          shardsInIndex=len(ds.shards), distinct=len(seen))
    del loader, ds
    shutil.rmtree(scratch, ignore_errors=True)
    emit(report, a.json)
    return 0


# --- flags ----------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    w = sub.add_parser("write", help="write the dataset's samples as MDS shards")
    add_store_args(w)
    w.add_argument("--out", required=True, help="the shard folder (kept when it already holds these ids)")
    w.add_argument("--shard-bytes", type=int, default=None, help="MDSWriter's size_limit (default: Streaming's, 64 MiB)")
    w.add_argument("--json", action="store_true", help="print only the JSON line")

    # The read side has a remote instead of a store: the run flags only (common.add_run_args).
    r = sub.add_parser("read", help="read the shards with StreamingDataset, timed")
    r.add_argument("--remote", required=True, help="http://HOST:PORT/BUCKET[/PREFIX]: nginx, or the proxy in front of it")
    r.add_argument("--local", required=True, help="Streaming's local cache folder (emptied before the run)")
    r.add_argument("--dataset", default="", help="the dataset's name, for the report")
    r.add_argument("--workers", type=int, default=2, help="DataLoader worker processes (default 2: one per core here)")
    r.add_argument("--limit", type=int, default=None, help="read N samples (Streaming's epoch_size)")
    r.add_argument("--seed", type=int, default=0, help="Streaming's shuffle_seed")
    add_run_args(r)

    a = p.parse_args(argv)
    if a.command == "write":
        return write(a)
    if a.workers < 0 or a.batch < 1:
        p.error("--workers must be ≥ 0 and --batch ≥ 1")
    a.store = a.remote  # Clock.report names the source as `store`
    return read(a)


if __name__ == "__main__":
    run_main(main)
