"""zgpu.torch: PyTorch data loading over zgpu's batched reads.

``import zgpu`` does not import this module, nor PyTorch; ``import zgpu.torch`` imports PyTorch (RandomCropDataset
raises ImportError where it is not installed; RandomCropSampler needs no PyTorch).

    >>> from zgpu.torch import RandomCropDataset
    >>> ds = RandomCropDataset("data/volume.zarr", crop_shape=(64, 64, 64), batch_size=16, n_batches=500,
    ...                        seed=0, device="cuda")
    >>> for epoch in range(10):
    ...     ds.set_epoch(epoch)                       # new crops each epoch
    ...     for batch in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0):
    ...         loss = model(batch)                   # (16, 64, 64, 64) on the GPU

One batch is one :meth:`zgpu.Array.read_batch` call: every chunk the batch's crops touch is fetched and decoded
once, into one stacked tensor (pinned host memory, or GPU memory directly).
"""
from __future__ import annotations

import math
import os
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

try:
    import torch
    from torch.utils.data import IterableDataset, get_worker_info
    _NO_TORCH: Optional[ImportError] = None
except ImportError as _e:  # the module still imports (RandomCropSampler needs no PyTorch); the dataset refuses
    torch = None  # type: ignore[assignment]
    _NO_TORCH = _e

    class IterableDataset:  # type: ignore[no-redef]
        """Stands for torch.utils.data.IterableDataset where PyTorch is not installed."""

    def get_worker_info() -> Any:  # type: ignore[misc]
        return None

__all__ = ["RandomCropSampler", "RandomCropDataset"]


def _torch_dtype(dtype: Any) -> "torch.dtype":
    """The torch dtype of a NumPy-like dtype (or a torch dtype, returned as is)."""
    if isinstance(dtype, torch.dtype):
        return dtype
    dt = np.dtype(dtype)
    try:
        return torch.from_numpy(np.empty(0, dt.newbyteorder("="))).dtype
    except TypeError:
        raise TypeError("no PyTorch dtype holds %s (zgpu dtype of the array)" % dt) from None


class RandomCropSampler:
    """Draws the crops of each batch: ``batch_size`` boxes of ``crop_shape`` placed uniformly at random in an array
    of ``shape``. Needs no array and no PyTorch tensors: ``a.read_batch(sampler.selections(b))`` reads batch b.

    crop_shape: the crop's extent on the *last* ``len(crop_shape)`` axes (-1 or None: the whole axis); each axis
        before those is picked with a random integer index, so that axis is not in the crop (2-D crops from a stack
        of images: ``crop_shape=(256, 256)`` on a (T, H, W) array gives crops of (256, 256)).
    n_batches: batches in an epoch.
    seed: the crops are a function of (seed, epoch, batch index) alone, so any worker can draw any batch, and a run
        is reproducible whatever the number of workers. None: a random seed, drawn once here.

    ``for sels in sampler`` yields each batch's selections for the current epoch (:meth:`set_epoch`).
    """

    def __init__(self, shape: Sequence[int], crop_shape: Sequence[Optional[int]], batch_size: int, n_batches: int,
                 seed: Optional[int] = 0) -> None:
        shape = tuple(int(s) for s in shape)
        crop = tuple(crop_shape) if isinstance(crop_shape, (tuple, list)) else (crop_shape,)
        if not 1 <= len(crop) <= len(shape):
            raise ValueError("crop_shape %r: between 1 and %d axes (the array's last axes)" % (crop, len(shape)))
        lead = len(shape) - len(crop)
        full = []
        for d, c in enumerate(crop):
            n = shape[lead + d]
            c = n if c is None or int(c) == -1 else int(c)
            if not 1 <= c <= n:
                raise ValueError("crop_shape %r does not fit the array's shape %r (axis %d: %d of %d)"
                                 % (tuple(crop_shape), shape, lead + d, c, n))
            full.append(c)
        for d in range(lead):
            if shape[d] == 0:
                raise ValueError("axis %d of shape %r is empty: no crop fits" % (d, shape))
        if int(batch_size) < 1 or int(n_batches) < 0:
            raise ValueError("batch_size must be >= 1 and n_batches >= 0, got %r and %r" % (batch_size, n_batches))
        self.shape = shape
        self.crop_shape: Tuple[int, ...] = tuple(full)
        self.lead = lead
        self.batch_size = int(batch_size)
        self.n_batches = int(n_batches)
        self.seed = int(np.random.SeedSequence().entropy % (1 << 63)) if seed is None else int(seed)
        if self.seed < 0:
            raise ValueError("seed must be >= 0, got %d" % self.seed)
        self.epoch = 0

    @property
    def batch_shape(self) -> Tuple[int, ...]:
        """Shape of one batch: (batch_size,) + crop_shape."""
        return (self.batch_size,) + self.crop_shape

    def set_epoch(self, epoch: int) -> None:
        """Crops of another epoch (as DistributedSampler.set_epoch)."""
        self.epoch = int(epoch)

    def starts(self, batch: int, epoch: Optional[int] = None) -> np.ndarray:
        """The crops' corners in batch `batch`: int64 (batch_size, ndim); crop i is
        ``a[s[0], ..., s[lead-1], s[lead]:s[lead]+crop[0], ...]`` with ``s = starts[i]`` (leading axes taken by an
        index, the rest by slices of crop_shape)."""
        e = self.epoch if epoch is None else int(epoch)
        rng = np.random.default_rng([self.seed, e, int(batch)])
        hi = np.array(self.shape[:self.lead] + tuple(n - c + 1 for n, c in zip(self.shape[self.lead:],
                                                                               self.crop_shape)), np.int64)
        return rng.integers(0, hi, size=(self.batch_size, len(self.shape)), dtype=np.int64)

    def selections(self, starts: Union[int, np.ndarray], epoch: Optional[int] = None) -> List[Tuple[Any, ...]]:
        """The selections (for read_batch) of a batch index, or of the corners :meth:`starts` gave."""
        if isinstance(starts, (int, np.integer)):
            starts = self.starts(int(starts), epoch)
        lead = self.lead
        return [tuple(int(x) for x in s[:lead]) +
                tuple(slice(int(x), int(x) + c) for x, c in zip(s[lead:], self.crop_shape)) for s in starts]

    def __len__(self) -> int:
        return self.n_batches

    def __iter__(self) -> Iterator[List[Tuple[Any, ...]]]:
        for b in range(self.n_batches):
            yield self.selections(b)


class RandomCropDataset(IterableDataset):
    """An ``IterableDataset`` of batches of random crops of a zgpu array; use it with
    ``DataLoader(ds, batch_size=None, num_workers=...)`` (each item is already a batch).

    source: a path or URL (or a :class:`zgpu.Array`, of which the path is kept): each process opens the array
        itself, at its first ``__iter__`` (an Array does not pickle, and a DataLoader worker needs its own).
    crop_shape, batch_size, seed: as for :class:`RandomCropSampler` (``self.sampler``).
    n_batches: batches per epoch; None: as many as cover the array's volume once on average
        (ceil(size / (batch_size * crop size))).
    device: None / "cpu": CPU tensors; "cuda" / "cuda:N" / a torch.device: the batch is read straight into GPU
        memory, ordered on PyTorch's current stream. CUDA is initialised at the first ``__iter__``, never here.
    dtype: a torch (or NumPy) dtype to convert the batch to (after the read); None: the array's.
    pinned: host batches in pinned (page-locked) memory, read straight into it, for fast ``.to("cuda",
        non_blocking=True)``. It needs CUDA in the process that reads: use it with ``num_workers=0`` (a worker's
        pinned tensor is copied into shared memory anyway; there use ``DataLoader(pin_memory=True)`` instead).
    return_boxes: yield ``(batch, starts)``, starts the int64 (batch_size, ndim) crop corners
        (:meth:`RandomCropSampler.starts`), rather than the batch alone.

    Workers: batch b of an epoch goes to worker ``b % num_workers``; its crops depend on (seed, epoch, b) only, so
    an epoch yields every batch once, whatever the number of workers, and the same batches. Call
    :meth:`set_epoch` before each epoch for new crops (with ``persistent_workers=True`` the workers keep the
    epoch they started with). With ``device="cuda"``, prefer ``num_workers=0``: the read already decodes on the
    GPU; workers that read into the GPU need ``multiprocessing_context="spawn"`` (a child forked from a process
    that used CUDA cannot use it: zgpu raises CudaError saying so).
    """

    def __init__(self, source: Any, crop_shape: Sequence[Optional[int]], batch_size: int, *,
                 n_batches: Optional[int] = None, seed: Optional[int] = 0, device: Any = None, dtype: Any = None,
                 pinned: bool = False, return_boxes: bool = False) -> None:
        if torch is None:
            raise ImportError("zgpu.torch.RandomCropDataset needs PyTorch (pip install torch): %s" % _NO_TORCH)
        super().__init__()
        import zgpu
        if isinstance(source, zgpu.Array):
            array: Optional[Any] = source
            self.path = source.path
        else:
            self.path = os.fspath(source) if not isinstance(source, str) else source
            array = zgpu.open_array(self.path)  # the metadata only (no chunk is read); closed below
        try:
            shape, np_dtype = tuple(array.shape), np.dtype(array.dtype)
        finally:
            if array is not source:
                array.close()
        crop = tuple(crop_shape) if isinstance(crop_shape, (tuple, list)) else (crop_shape,)
        if n_batches is None:
            probe = RandomCropSampler(shape, crop, batch_size, 0, 0)
            n_batches = max(1, math.ceil(math.prod(shape) / (probe.batch_size * math.prod(probe.crop_shape))))
        self.sampler = RandomCropSampler(shape, crop, batch_size, n_batches, seed)
        self.shape = shape
        self.array_dtype = np_dtype
        self._native = _torch_dtype(np_dtype)
        self.dtype = self._native if dtype is None else _torch_dtype(dtype)
        self.device = None if device is None or str(device) == "cpu" else str(device)
        if self.device is not None and not (self.device == "cuda" or self.device.startswith("cuda:")):
            raise ValueError("device must be None, 'cpu', 'cuda' or 'cuda:N', got %r" % (device,))
        if pinned and self.device is not None:
            raise ValueError("pinned=True is for host batches; with device=%r the batch is in GPU memory" % device)
        self.pinned = bool(pinned)
        self.return_boxes = bool(return_boxes)
        # the array of this process, opened lazily (kept with the pid that opened it: a forked worker opens its own)
        self._array: Optional[Any] = source if array is source else None
        self._array_pid: Optional[int] = os.getpid() if self._array is not None else None

    # ---- pickling: a spawned worker gets the path and the options, and opens the array itself -------------
    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_array"] = None
        state["_array_pid"] = None
        return state

    def _open(self) -> Any:
        if self._array is None or self._array_pid != os.getpid():
            import zgpu
            self._array = zgpu.open_array(self.path)
            self._array_pid = os.getpid()
        return self._array

    # ---- epochs -------------------------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """The epoch whose crops are drawn (:meth:`set_epoch`)."""
        return self.sampler.epoch

    def set_epoch(self, epoch: int) -> None:
        """Draws the crops of epoch `epoch` from now on (call before iterating a DataLoader over it)."""
        self.sampler.set_epoch(epoch)

    def __len__(self) -> int:
        """Batches in an epoch (over all workers)."""
        return self.sampler.n_batches

    # ---- reading ------------------------------------------------------------------------------------------
    def _torch_device(self) -> Optional["torch.device"]:
        if self.device is None:
            return None
        dev = torch.device(self.device)
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())  # (CUDA starts here, in the reading process)
        return dev

    def read(self, batch: int, epoch: Optional[int] = None) -> Any:
        """Batch `batch` of the epoch (the current one by default), as ``__iter__`` yields it."""
        return self._read(self._open(), batch, epoch, self._torch_device())

    def _read(self, array: Any, batch: int, epoch: Optional[int], dev: Optional["torch.device"]) -> Any:
        starts = self.sampler.starts(batch, epoch)
        sels = self.sampler.selections(starts)
        full = self.sampler.batch_shape
        convert = self.dtype != self._native
        if dev is not None:
            out = torch.empty(full, dtype=self._native, device=dev)
            array.read_batch(sels, out=out, stream=torch.cuda.current_stream(dev))
            if convert:
                out = out.to(self.dtype)
        else:
            out = torch.empty(full, dtype=self._native, pin_memory=self.pinned and not convert)
            array.read_batch(sels, out=out.numpy())  # (a view of the tensor's memory: read in place)
            if convert:
                out = torch.empty(full, dtype=self.dtype, pin_memory=self.pinned).copy_(out)
        if self.return_boxes:
            return out, torch.from_numpy(starts)
        return out

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        array = self._open()
        dev = self._torch_device()
        epoch = self.sampler.epoch
        for b in range(worker, self.sampler.n_batches, workers):
            yield self._read(array, b, epoch, dev)

    def __repr__(self) -> str:
        return ("<zgpu.torch.RandomCropDataset %r crop=%r batch=%d n_batches=%d device=%s dtype=%s>"
                % (self.path, self.sampler.crop_shape, self.sampler.batch_size, self.sampler.n_batches,
                   self.device or "cpu", self.dtype))
