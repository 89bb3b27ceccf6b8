"""The compiled neighbour-attention kernel (``neighbor_attention.cpp``): building it, and its autograd.

Dense attention costs O(Nq x Nk) per graph whatever the mask; this kernel visits only the allowed
(query, key) pairs, O(Nq x degree). It is C++ for the CPU, built by ``torch.utils.cpp_extension``
with the machine's C++ compiler the first time it is used (about 20 s, once) and
loaded from the build folder after that, by every process: a training's Ray workers too (one
builds while the others wait, ``build_lock``; a process killed meanwhile blocks none of them). A
machine without a compiler still runs: ``auto`` falls back to SDPA with a warning, and only an
explicit ``attention_impl: neighbors`` fails.

Shapes as in ``encoder.attention``: B batch, Nq queries, Nk keys, H heads, d head dim.
"""
from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import Tensor

NAME = "neighbor_attention"
SOURCE = Path(__file__).with_name(f"{NAME}.cpp")
VECTOR_FLAGS = ["-mavx2", "-mfma"]
"""Where torch found AVX2 on this CPU (``torch.backends.cpu.get_cpu_capability()``): 8 floats per
instruction instead of SSE2's 4, and fused multiply-adds; faster than SSE2 and than AVX-512
builds (docs/performance.md)."""


def has_avx2() -> bool:
    """Whether torch found AVX2 (or AVX-512, which includes it) on this CPU."""
    return torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


def compiler_flags() -> list[str]:
    """``-O3``; ``-fopenmp``, which makes ``at::parallel_for`` use torch's intra-op threads
    (``torch.set_num_threads``; the OpenMP runtime is torch's own, already loaded; without the flag
    the kernel runs on one thread); ``VECTOR_FLAGS`` where the CPU has AVX2."""
    return ["-O3", "-fopenmp", *(VECTOR_FLAGS if has_avx2() else [])]


def build_directory() -> Path:
    """Where the kernel is built: torch's extensions folder (``TORCH_EXTENSIONS_DIR``, else
    ``~/.cache/torch_extensions``), one subfolder per Python and torch version, because a build is
    tied to both, and per instruction set, so that machines sharing a home folder (a cluster's
    nodes) never load a build their CPU cannot run."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or Path.home() / ".cache" / "torch_extensions"
    version = f"py{sysconfig.get_python_version().replace('.', '')}_torch{torch.__version__.replace('+', '_')}"
    instructions = "avx2" if has_avx2() else "baseline"
    return Path(root) / version / f"{NAME}_{instructions}"


_LOADING = threading.Lock()
"""Held while ``load_kernel`` builds or loads the kernel: ``functools.cache`` alone lets two threads both build it."""


def load_kernel():
    """The kernel's operators (``torch.ops.neighbor_attention``: ``csr_from_mask``, ``forward`` and
    ``backward``), built on the first call of the process if the build folder has none. Raises
    RuntimeError, with the compiler's reason, when it cannot be built; the outcome, either way, is
    kept for the rest of the process. Threads of one process wait for the first to finish
    (``ppo_update`` runs a minibatch's parts on threads, which may be the first to need it)."""
    with _LOADING:
        kernel, error = _build_or_load()
    if error is not None:
        raise RuntimeError(error)
    return kernel


def kernel_error() -> str | None:
    """None when the kernel loads, else why it does not (the kernel is built if need be)."""
    return _build_or_load()[1]


def staged_source(folder: Path) -> Path:
    """``SOURCE`` copied into ``folder`` (rewritten only when its content differs), the path the
    build compiles. ninja rebuilds when the compile command changes, and the command names the
    source's path: compiling the checkout's own file rebuilt the kernel for every other copy of
    the code, e.g. each Ray job's ``working_dir`` unpacked under a new session folder (about 20 s
    a job and node, and again for the checkout afterwards).

    Two processes staging into an empty folder at once (two test workers, two Ray actors) keep
    the first one's file: a second write would give it a newer time than the build the first
    process starts, and ninja would compile it again in the next process to load the kernel."""
    staged = folder / SOURCE.name
    content = SOURCE.read_bytes()
    first = not staged.is_file()
    if not first and staged.read_bytes() == content:
        return staged
    partial = staged.with_name(f"{staged.name}.{os.getpid()}.partial")
    partial.write_bytes(content)
    if not first:  # another version: replaced whole, for a process compiling it at this moment
        os.replace(partial, staged)
        return staged
    try:
        os.link(partial, staged)  # whole, and only if no other process has staged it meanwhile
    except FileExistsError:
        pass  # another process has: its file stays as it is
    except OSError:  # a file system without hard links: replaced whole, as another version is
        os.replace(partial, staged)
        return staged
    partial.unlink()
    return staged


TORCH_LOCK = "lock"
"""The file ``torch.utils.cpp_extension.load`` creates in the build folder while it checks or builds,
and removes after (``torch.utils.file_baton``). A process killed in between leaves it behind, and
every later ``load`` of the folder then waits for it to go, for ever, without a word."""


@contextmanager
def build_lock(folder: Path) -> Iterator[None]:
    """Hold the kernel's own lock on ``folder`` while torch loads or builds it there.

    An ``fcntl.flock`` on ``build.lock``, which the system releases when its process ends, killed
    or not. Every process of this project takes it before torch's file lock, so whoever holds it
    knows that a ``TORCH_LOCK`` file still there was left by a killed process, and removes it.
    A process that finds the lock taken waits, as torch's own would, while another builds. On a
    file system without such locks (some network ones) torch's lock alone guards the build."""
    with open(folder / "build.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            yield
            return
        try:
            (folder / TORCH_LOCK).unlink(missing_ok=True)  # stale: its owner died holding it
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@functools.cache
def _build_or_load():
    """(the operators, None), or (None, the reason) when they cannot be built; once per process."""
    from torch.utils.cpp_extension import load

    folder = build_directory()
    folder.mkdir(parents=True, exist_ok=True)
    if shutil.which("ninja") is None:  # torch builds with ninja; requirements.txt installs it beside Python
        os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    if not any(folder.glob(f"{NAME}*.so")):
        print(f"Building the neighbour-attention kernel in {folder} (once; about 20 s)", file=sys.stderr, flush=True)
    try:
        with build_lock(folder):
            load(name=NAME, sources=[str(staged_source(folder))], extra_cflags=compiler_flags(),
                 build_directory=str(folder), is_python_module=False, verbose=False)  # registers its operators
        return getattr(torch.ops, NAME), None  # the .cpp's TORCH_LIBRARY namespace, NAME
    except (RuntimeError, OSError, ImportError, subprocess.SubprocessError) as error:
        return None, (f"the neighbour-attention kernel could not be built in {folder}: {error}. "
                      f"model.attention_impl: sdpa needs no compiler")


class NeighborAttentionFunction(torch.autograd.Function):
    """The kernel's forward and backward as one autograd node, over rows of nodes.

    Takes Q [Rq,H,d], K and V [Rk,H,d] (contiguous), the allowed pairs in CSR form (the keys of
    query row r are the rows ``keys[offsets[r]:offsets[r + 1]]`` of K, ascending) and
    ``query_graphs`` [G+1], the query rows at which each graph starts (and the end); returns heads
    [Rq,H,d]. The forward keeps the attention probabilities of the allowed pairs (E x H numbers),
    so the backward needs no softmax.
    """

    @staticmethod
    def forward(ctx, Q: Tensor, K: Tensor, V: Tensor, offsets: Tensor, keys: Tensor, query_graphs: Tensor,
                norm_factor: float) -> Tensor:
        heads, probs = load_kernel().forward(Q, K, V, offsets, keys, norm_factor)
        ctx.save_for_backward(Q, K, V, heads, offsets, keys, probs, query_graphs)
        ctx.norm_factor = norm_factor
        return heads

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_heads: Tensor):
        dQ, dK, dV = load_kernel().backward(grad_heads.contiguous(), *ctx.saved_tensors, ctx.norm_factor)
        return dQ, dK, dV, None, None, None, None


def neighbor_rows(Q: Tensor, K: Tensor, V: Tensor, offsets: Tensor, keys: Tensor, query_graphs: Tensor,
                   norm_factor: float) -> Tensor:
    """``NeighborAttentionFunction`` on rows: Q [Rq,H,d], K and V [Rk,H,d] -> heads [Rq,H,d]; a
    query with no allowed key gets zeros. Without autograd (a rollout's forward passes) no node is
    built (about 3 us of 14 a call)."""
    Q, K, V = (x.contiguous() for x in (Q, K, V))
    if torch.is_grad_enabled() and (Q.requires_grad or K.requires_grad or V.requires_grad):
        return NeighborAttentionFunction.apply(Q, K, V, offsets, keys, query_graphs, norm_factor)
    return load_kernel().forward(Q, K, V, offsets, keys, norm_factor)[0]


def neighbor_heads(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor, norm_factor: float) -> Tensor:
    """Q [B,H,Nq,d], K and V [B,H,Nk,d] (``MultiHeadAttention``'s layout), mask [B,Nq,Nk] bool
    -> heads [B,H,Nq,d], by the kernel; a query with no allowed key gets zeros.

    The padded batch is B x Nq query rows; the mask's allowed pairs become the kernel's CSR lists
    (``csr_from_mask``). The heads are transposed back to nodes first: a view of the projections'
    own memory, so no copy is made when they come from ``MultiHeadAttention``.
    """
    B, H, Nq, d = Q.shape
    offsets, keys = load_kernel().csr_from_mask(mask.contiguous())
    query_graphs = torch.arange(B + 1) * Nq
    Q, K, V = (x.transpose(1, 2).reshape(-1, H, d) for x in (Q, K, V))  # [B*N,H,d]
    heads = neighbor_rows(Q, K, V, offsets, keys, query_graphs, norm_factor)
    return heads.view(B, Nq, H, d).transpose(1, 2)  # [B,H,Nq,d]
