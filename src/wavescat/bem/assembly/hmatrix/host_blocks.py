"""Low-rank blocks moved from the GPU to pinned host memory when an assembly needs the room.

One rank of the 4 kHz submarine holds about 77 GiB of blocks (issue 28): more than an H100's
80 GB leaves beside the working arrays of an assembly. Rather than fail there, the assembly
asks for room (`make_room`) before each step that allocates: the factors of blocks already
assembled, on this device, move to pinned (page-locked) host memory, the largest first, until
the step fits. A product then streams those factors back over PCIe a chunk at a time
(hmatrix.DevicePart): slower products, the same sums. Nothing moves while the device has
room, so a solve that fits runs as before.

The groups of every H-matrix assembled on a device are registered here (weakly: a freed
operator drops out); a group and its transpose (a mirrored symmetric block, or HMatrix.T)
share their factors, and move together.
"""
from __future__ import annotations

import logging
import weakref

import numpy as np

from ....errors import WavescatError
from ....memory import available_gpu_bytes
from ....memory import available_host_bytes as host_free_bytes

log = logging.getLogger(__name__)

RESERVE_BYTES = 1 << 30  # left free beyond a step's need: cuBLAS work space, the pool's cuts
_PARTS: dict[int, weakref.WeakSet] = {}  # device -> its DeviceParts


def register(part) -> None:
    """Make `part`'s low-rank groups candidates for the host (GPU parts only)."""
    if part.backend.is_gpu:
        _PARTS.setdefault(part.device_id, weakref.WeakSet()).add(part)


def device_free_bytes(backend, device_id) -> int:
    """Bytes device `device_id` can still give (memory.available_gpu_bytes)."""
    with backend.device(device_id):
        return available_gpu_bytes(backend.xp)


def pinned_empty(xp, shape, dtype) -> np.ndarray:
    """A host array in pinned memory (plain host memory where the array module has none: the
    CPU's emulation), checked against the host memory available."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if nbytes > host_free_bytes() - (4 << 30):
        raise WavescatError(
            f"{nbytes / 2**30:.1f} GiB of H-matrix blocks cannot move to the host: "
            f"{host_free_bytes() / 2**30:.1f} GiB of host memory are free; use more GPUs (or "
            f"nodes), a larger hmatrix.eps, or backend: cpu")
    alloc = getattr(getattr(xp, "cuda", None), "alloc_pinned_memory", None)
    if alloc is None:
        return np.empty(shape, dtype)
    return np.ndarray(shape, dtype, buffer=alloc(max(nbytes, 1)))  # as cupyx.empty_pinned


def copy_to_host(xp, a, out) -> None:
    """out[...] = device array a, a slab at a time (no second device copy of a whole)."""
    step = max(1, (256 << 20) // max(1, a[:1].nbytes))
    for s in range(0, a.shape[0], step):
        out[s:s + step] = xp.asnumpy(a[s:s + step])


def _pinned_copy(xp, a):
    out = pinned_empty(xp, a.shape, a.dtype)
    copy_to_host(xp, a, out)
    return out


def _candidates(device_id):
    """{(id U, id V) unordered: [groups]} of the device's low-rank groups still on it."""
    found = {}
    for part in list(_PARTS.get(device_id, ())):
        for g in part.lowrank:
            if g.D is None and not g.on_host:
                found.setdefault(frozenset((id(g.U), id(g.V))), []).append(g)
    return found


def make_room(backend, device_id, need_bytes, free_bytes=None) -> int:
    """Move registered low-rank groups of device `device_id` to pinned host memory, the
    largest first, until `need_bytes` and RESERVE_BYTES are free (free_bytes(backend,
    device_id)). Returns the bytes moved; moves nothing on the CPU or where the room is
    there. Stops when nothing is left to move: the caller's allocation then fails as it
    would have."""
    if not backend.is_gpu:
        return 0
    free_bytes = free_bytes or device_free_bytes
    want = int(need_bytes) + RESERVE_BYTES
    short = want - free_bytes(backend, device_id)
    if short <= 0:
        return 0
    xp = backend.xp
    moved, count = 0, 0
    for shared in sorted(_candidates(device_id).values(), key=lambda gs: -gs[0].nbytes):
        if short <= 0:
            break
        size = shared[0].nbytes
        first = shared[0]
        with backend.device(device_id):
            host = {id(first.U): _pinned_copy(xp, first.U), id(first.V): _pinned_copy(xp, first.V)}
        for g in shared:  # a group and its transposes: the same factors, swapped
            g.U, g.V, g.on_host = host[id(g.U)], host[id(g.V)], True
        del first, host
        moved += size
        count += 1
        short = want - free_bytes(backend, device_id)
    if moved:
        log.info("GPU %d: moved %.2f GiB of H-matrix blocks (%d groups) to pinned host memory "
                 "to make room for %.2f GiB; products read them over PCIe", device_id,
                 moved / 2**30, count, need_bytes / 2**30)
    return moved


class Room:
    """make_room on one device as a callable (`room(nbytes)`), which may also move the
    finished pieces of the operator being assembled (`hold`): one operator larger than its
    device then assembles too, its first pieces on the host."""

    def __init__(self, backend, device_id):
        self.backend, self.device_id = backend, device_id
        self.lowrank = []  # the pieces held, as a DevicePart lists its groups
        register(self)

    def __call__(self, nbytes) -> bool:
        """Room for `nbytes` made where it can be: whether it is there now."""
        make_room(self.backend, self.device_id, nbytes)
        return device_free_bytes(self.backend, self.device_id) >= nbytes + RESERVE_BYTES

    @property
    def nbytes(self) -> int:
        return sum(g.nbytes for g in self.lowrank)

    @property
    def host_nbytes(self) -> int:
        return sum(g.nbytes for g in self.lowrank if g.on_host)

    def hold(self, group) -> None:
        self.lowrank.append(group)

    def release(self, groups=None) -> None:
        """No longer move `groups` (None: any held)."""
        gone = {id(g) for g in groups} if groups is not None else None
        self.lowrank = [] if gone is None else [g for g in self.lowrank if id(g) not in gone]


def make_room_here(backend, need_bytes) -> int:
    """make_room on the current device (what the next allocations of `backend` take)."""
    if not backend.is_gpu:
        return 0
    return make_room(backend, getattr(backend.xp.cuda.Device(), "id", 0), need_bytes)
