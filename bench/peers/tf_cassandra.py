"""The tf.data peer: a `tf.data.Dataset` of sample ids, mapped through a fetch by UUID from
cassette's Cassandra tables with the Python cassandra-driver, decoded with TensorFlow's own
`tf.io.decode_jpeg` and made into the training tensor, batched and prefetched: the way a
TensorFlow user feeds training from a store that has no TF reader.

    python bench/peers/tf_cassandra.py --store cassandra://127.0.0.1:9042/KS --dataset fm \
        [--tensor fm|imagenet] [--batch B] [--parallel N] [--interleave K] \
        [--deterministic|--no-deterministic] [--threadpool T] [--crop-decode] \
        [--step-ms S] [--limit N] [--ids FILE] [--seed S] [--dump FILE] [--series] [--json]

The pipeline (tf.data's performance guide: parallelize the I/O, parallelize the transform,
batch, prefetch):
  ids ─ map(fetch, num_parallel_calls=P) ─ map(decode + tensor, num_parallel_calls=P) ─ batch(B) ─ prefetch(AUTOTUNE)
  --interleave K: the ids are cut into K shards (every K-th id, tf.data's `shard`), each shard
                  fetched one sample after another as a file reader would read records, and
                  `interleave(..., cycle_length=K, block_length=1, num_parallel_calls=AUTOTUNE)`
                  runs the K shards at once, taking one sample from each in turn (so the order
                  is the ids' own when deterministic); then decode + tensor as above. This is the
                  guide's "parallel interleave" with the store in place of K files.
  P is tf.data.AUTOTUNE by default (what the guide and most training scripts write), or
  --parallel N. Either way the calls run on the pipeline's thread pool, by default TF's, one
  thread per core (2 here), and a fetch holds its thread while it waits for the row: so by
  default at most 2 fetches are in flight, whatever P says (measured: maxInFlight 2 with
  AUTOTUNE, --parallel 16 and --interleave 8 alike). --threadpool T gives the pipeline a
  private pool of T threads (tf.data.Options().threading.private_threadpool_size); AUTOTUNE
  then tunes up to T. The default stays TF's, as a user who follows the guide runs it.
  maxInFlight in the report is the most fetches seen at once.

--deterministic (default) is tf.data's default: the batches come in the ids' order, a slow
fetch holding back those after it, like PyTorch's in_order=True. --no-deterministic sets
`tf.data.Options().deterministic = False`, which lets a parallel map or interleave hand over
whichever element is ready first.

The fetch: `SELECT label, data FROM <prefix>_data_by_uuid WHERE id = ?`, prepared, idempotent,
at LOCAL_ONE, on one cassandra-driver session for the process (the driver's sessions are
thread-safe and tf.data calls the fetch from its own threads), through `tf.numpy_function`.
The driver waits for a row with the GIL released, so parallel fetches overlap; the Python
around each one does not. A missing row stops the run with MissingSample naming the id.

The tensor (NCHW float32, like the other peers, so the dumps compare sample by sample):
  --tensor fm        [B, 1, 28, 28]: decode_jpeg(channels=1), (x/255 − 0.2860) / 0.3530.
  --tensor imagenet  [B, 3, 224, 224]: decode_jpeg(channels=3); a random resized crop
                     (tf.image.sample_distorted_bounding_box, area 0.08–1, aspect 3/4–4/3, 10
                     tries, else the whole image) resized to 224×224 bilinear; a random
                     left-right flip; /255; ImageNet's mean and std. --crop-decode decodes only
                     the crop (tf.image.decode_and_crop_jpeg, as TF's own ImageNet input
                     pipelines do); the default decodes the whole image, as the other peers and
                     cassette do.

Output: one JSON line, the fields of common.Clock (peer "tfdata"): the clock starts at the
first `iter()` with the session already open (connectSeconds says what opening it took); CPU
seconds are this process's, all of TF's and the driver's threads.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid

# TF's C++ INFO lines (CPU features) on every start; 1 drops INFO only, so warnings and errors
# still show. A value the caller set wins. The oneDNN line and absl's "before InitializeLog"
# line still come, as they are logged before TF reads it (tensorflow/tensorflow#100442).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import numpy as np
import tensorflow as tf

from common import FM_MEAN, FM_STD, IN_MEAN, IN_SIZE, IN_STD, Clock, add_common_args, connect, emit, epoch_ids, parse_address, prepare_read, run_main


class MissingSample(LookupError):
    """The store has no row for an id of the epoch."""


# --- the fetch ------------------------------------------------------------------------------


class Fetcher:
    """One session for the process; `fetch` is called by tf.data's threads, several at once."""

    def __init__(self, addr: dict, dataset: str):
        self.cluster, self.session = connect(addr)
        self.stmt = prepare_read(self.session, addr, dataset)
        self.error: BaseException | None = None  # the first failure, re-raised by main as itself
        self._lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0

    def fetch(self, sample_id: bytes):
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            sid = sample_id.decode()
            row = self.session.execute(self.stmt, [uuid.UUID(sid)]).one()
            if row is None:
                raise MissingSample(f"Cannot read sample {sid} as the store has no row for it")
            # An object array: tf.string takes the bytes whole (a fixed-width 'S' array would
            # drop trailing NUL bytes).
            return np.array(row.data, dtype=object), np.int64(row.label)
        except BaseException as e:
            # tf.numpy_function turns it into an OpError whose text is a traceback; keep the
            # original so main can raise it (NoHostAvailable then gets run_main's one line).
            with self._lock:
                if self.error is None:
                    self.error = e
            raise
        finally:
            with self._lock:
                self.in_flight -= 1

    def op(self, sample_id):
        data, label = tf.numpy_function(self.fetch, [sample_id], [tf.string, tf.int64], stateful=True, name="cassandra_fetch")
        data.set_shape([])
        label.set_shape([])
        return sample_id, data, label

    def close(self) -> None:
        self.cluster.shutdown()


# --- the training tensor --------------------------------------------------------------------


def fm_tensor(data):
    """1×28×28 float32: grey, (x/255 − mean) / std (common.fm_array's, in TF ops)."""
    img = tf.io.decode_jpeg(data, channels=1)
    hw = tf.shape(img)[:2]
    img = tf.cond(tf.reduce_all(hw == 28), lambda: tf.cast(img, tf.float32),
                  lambda: tf.image.resize(img, [28, 28], method="bilinear"))
    x = (tf.ensure_shape(img, [28, 28, 1]) / 255.0 - FM_MEAN) / FM_STD
    return tf.transpose(x, [2, 0, 1])


def imagenet_tensor(data, crop_decode: bool):
    """3×224×224 float32: random resized crop, random flip, /255, ImageNet's mean and std."""
    shape = tf.image.extract_jpeg_shape(data)
    # No boxes given: the whole image is the object, min_object_covered=0 lets any crop do;
    # after 10 tries without a crop in range it returns the whole image.
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        shape, bounding_boxes=tf.zeros([1, 0, 4]), min_object_covered=0.0,
        aspect_ratio_range=(3 / 4, 4 / 3), area_range=(0.08, 1.0), max_attempts=10,
        use_image_if_no_bounding_boxes=True)
    if crop_decode:
        window = tf.stack([begin[0], begin[1], size[0], size[1]])
        img = tf.image.decode_and_crop_jpeg(data, window, channels=3)
    else:
        img = tf.slice(tf.io.decode_jpeg(data, channels=3), begin, size)
    img = tf.image.resize(img, [IN_SIZE, IN_SIZE], method="bilinear")  # float32, 0..255
    img = tf.image.random_flip_left_right(img)
    x = (img / 255.0 - tf.constant(IN_MEAN)) / tf.constant(IN_STD)
    return tf.transpose(tf.ensure_shape(x, [IN_SIZE, IN_SIZE, 3]), [2, 0, 1])


# --- the pipeline ---------------------------------------------------------------------------


def pipeline(a: argparse.Namespace, ids: list[str], fetcher: Fetcher) -> tf.data.Dataset:
    par = tf.data.AUTOTUNE if a.parallel is None else a.parallel
    ids_ds = tf.data.Dataset.from_tensor_slices(ids)
    if a.interleave > 1:
        k = a.interleave
        ds = tf.data.Dataset.range(k).interleave(
            lambda i: ids_ds.shard(k, i).map(fetcher.op),
            cycle_length=k, block_length=1, num_parallel_calls=tf.data.AUTOTUNE)
    else:
        ds = ids_ds.map(fetcher.op, num_parallel_calls=par)
    if a.tensor == "fm":
        tensor = fm_tensor
    else:
        tensor = lambda data: imagenet_tensor(data, a.crop_decode)  # noqa: E731
    ds = ds.map(lambda sid, data, label: (tensor(data), label, tf.strings.length(data), sid), num_parallel_calls=par)
    ds = ds.batch(a.batch).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.deterministic = a.deterministic
    if a.threadpool:
        options.threading.private_threadpool_size = a.threadpool
    return ds.with_options(options)


# --- the run --------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p)
    p.add_argument("--parallel", type=int, default=None,
                   help="num_parallel_calls of the fetch and tensor maps (default: tf.data.AUTOTUNE)")
    p.add_argument("--interleave", type=int, default=1,
                   help="K > 1: K shards of the ids fetched at once by a parallel interleave (default 1: a parallel map)")
    p.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=True,
                   help="tf.data.Options().deterministic (default on, tf.data's default)")
    p.add_argument("--threadpool", type=int, default=0,
                   help="a private thread pool of T threads for the pipeline (default 0: TF's shared one)")
    p.add_argument("--crop-decode", action="store_true",
                   help="--tensor imagenet: decode only the crop (tf.image.decode_and_crop_jpeg)")
    a = p.parse_args(argv)
    if a.batch < 1 or a.interleave < 1 or a.threadpool < 0 or (a.parallel is not None and a.parallel < 1):
        p.error("--batch, --interleave and --parallel must be ≥ 1, --threadpool ≥ 0")

    # TF's inter- and intra-op thread pools are left at their defaults (one thread per core):
    # that is what a TF user runs. The pipeline's own pool is --threadpool (see the docstring).
    tf.random.set_seed(a.seed)
    addr = parse_address(a.store)
    ids, list_s = epoch_ids(a, addr)
    t = time.perf_counter()
    fetcher = Fetcher(addr, a.dataset)
    connect_s = time.perf_counter() - t
    try:
        ds = pipeline(a, ids, fetcher)
        clock = Clock(a)
        clock.start()
        try:
            for images, labels, nbytes, sids in ds:
                first_dump = a.dump and clock.batches == 0
                go_on = clock.batch(int(labels.shape[0]), int(tf.reduce_sum(nbytes)), images.shape,
                                    images.numpy() if first_dump else None,
                                    [s.decode() for s in sids.numpy()] if first_dump else None,
                                    labels.numpy().tolist() if first_dump else None)
                clock.stepped()
                if not go_on:
                    break
        except tf.errors.OpError:
            if fetcher.error is not None:
                raise fetcher.error from None
            raise
        clock.stop()
    finally:
        fetcher.close()
    emit(clock.report("tfdata", parallel="autotune" if a.parallel is None else a.parallel,
                      interleave=a.interleave, deterministic=a.deterministic, threadpool=a.threadpool,
                      cropDecode=a.crop_decode, maxInFlight=fetcher.max_in_flight,
                      listSeconds=list_s, connectSeconds=connect_s, tensorflow=tf.__version__), a.json)
    return 0


if __name__ == "__main__":
    run_main(main)
