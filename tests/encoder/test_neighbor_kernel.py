"""The compiled neighbour-attention kernel against the reference attention, and how it is built."""
import os
from pathlib import Path

import pytest
import torch

from encoder import neighbor_kernel
from encoder.attention import neighbor_attention, reference_attention
from encoder.neighbor_kernel import NeighborAttentionFunction


def attention_inputs(B=3, H=4, Nq=9, Nk=11, d=16, dtype=torch.float64, seed=0):
    """Q [B,H,Nq,d], K and V [B,H,Nk,d] and a ragged mask [B,Nq,Nk] with two rows that allow no key."""
    g = torch.Generator().manual_seed(seed)
    Q, K, V = (torch.randn(B, H, n, d, generator=g, dtype=dtype) for n in (Nq, Nk, Nk))
    mask = torch.rand(B, Nq, Nk, generator=g) < 0.3
    mask[:, :, 0] = True
    mask[0, min(2, Nq - 1)] = False
    mask[-1, -1] = False
    return Q, K, V, mask


@pytest.mark.parametrize("head_dim", [16, 8])  # 16 has a kernel of its own, other sizes the general one
@pytest.mark.parametrize("shape", [(9, 11), (1, 11), (11, 11)])  # (Nq, Nk): cross, decoder-like, self
def test_equals_the_reference_attention_in_outputs_and_gradients(head_dim, shape):
    Q, K, V, mask = attention_inputs(Nq=shape[0], Nk=shape[1], d=head_dim)
    weights = torch.randn(Q.shape, dtype=Q.dtype)  # a loss that weighs every output differently
    results = []
    for attend in (lambda *x: neighbor_attention(*x)[0], lambda *x: reference_attention(*x)[0]):
        inputs = [x.clone().requires_grad_() for x in (Q, K, V)]
        out = attend(*inputs, mask, 0.3)
        (out * weights).sum().backward()
        results.append([out.detach()] + [x.grad for x in inputs])
    for ours, expected in zip(*results):
        torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)


def on_rows(Q, K, V, mask, scale):
    """The autograd node on the rows of a padded batch: Q [B,Nq,H,d], K and V [B,Nk,H,d]."""
    offsets, keys = neighbor_kernel.load_kernel().csr_from_mask(mask)
    B, Nq, H, d = Q.shape
    rows = (x.reshape(-1, H, d) for x in (Q, K, V))
    return NeighborAttentionFunction.apply(*rows, offsets, keys, torch.arange(B + 1) * Nq, scale)


@pytest.mark.parametrize("head_dim", [16, 8])
def test_gradients_pass_gradcheck(head_dim):
    Q, K, V, mask = attention_inputs(B=2, H=2, Nq=5, Nk=6, d=head_dim)
    inputs = [x.transpose(1, 2).contiguous().requires_grad_() for x in (Q, K, V)]  # [B,N,H,d]
    assert torch.autograd.gradcheck(lambda q, k, v: on_rows(q, k, v, mask, 0.4), inputs)


def test_csr_lists_each_querys_allowed_key_rows_in_ascending_order():
    _, _, _, mask = attention_inputs(B=2, Nq=4, Nk=5)
    offsets, keys = neighbor_kernel.load_kernel().csr_from_mask(mask)
    b, i, j = mask.nonzero(as_tuple=True)  # row-major: by graph, then query, then key
    assert torch.equal(keys, b * 5 + j)
    assert torch.equal(offsets, torch.cat([torch.zeros(1, dtype=torch.long), mask.sum(-1).flatten().cumsum(0)]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_rows_without_keys_are_exact_zeros_and_the_rest_match_fp64(dtype):
    Q, K, V, mask = attention_inputs()
    mask[1] = False  # a whole graph of padding too
    inputs = [x.to(dtype).requires_grad_() for x in (Q, K, V)]
    out, _ = neighbor_attention(*inputs, mask, 0.25)
    out.float().square().sum().backward()
    for tensor in [out] + [x.grad for x in inputs]:
        assert tensor.dtype == dtype and torch.isfinite(tensor).all()
    assert torch.equal(out[0, :, 2], torch.zeros_like(out[0, :, 2]))
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    assert (inputs[0].grad[0, :, 2] == 0).all()  # nothing flows back from a padding row
    assert (inputs[1].grad[1] == 0).all() and (inputs[2].grad[1] == 0).all()  # nor into a graph without pairs
    expected, _ = reference_attention(*(x.to(dtype).double() for x in (Q, K, V)), mask, 0.25)
    tolerance = {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 2e-3}[dtype]
    torch.testing.assert_close(out.double(), expected, rtol=tolerance, atol=tolerance)


def test_results_do_not_depend_on_the_thread_count():
    """The Ray collector's rollouts equal the in-process ones only if every number is the same
    on 1 and on 2 threads; the forward splits queries between threads, the backward graphs."""
    Q, K, V, mask = attention_inputs(B=6, Nq=40, Nk=40, dtype=torch.float32)
    threads = torch.get_num_threads()
    results = []
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            inputs = [x.clone().requires_grad_() for x in (Q, K, V)]
            out, _ = neighbor_attention(*inputs, mask, 0.25)
            out.sum().backward()
            results.append([out] + [x.grad for x in inputs])
    finally:
        torch.set_num_threads(threads)
    for one, two in zip(*results):
        assert torch.equal(one, two)


def test_without_autograd_the_outputs_are_the_same_bit_for_bit():
    """A rollout's forward passes skip the autograd node; they must not change a single bit."""
    Q, K, V, mask = attention_inputs(dtype=torch.float32)
    with_graph, _ = neighbor_attention(*(x.clone().requires_grad_() for x in (Q, K, V)), mask, 0.25)
    with torch.no_grad():
        without, _ = neighbor_attention(Q, K, V, mask, 0.25)
    assert with_graph.grad_fn is not None and without.grad_fn is None
    assert torch.equal(with_graph.detach(), without)


def test_bad_shapes_are_refused_with_the_expected_shape():
    Q, K, V, mask = attention_inputs(dtype=torch.float32)
    offsets, keys = neighbor_kernel.load_kernel().csr_from_mask(mask)
    Q, K, V = (x.transpose(1, 2).reshape(-1, 4, 16) for x in (Q, K, V))  # 27 query rows, 33 key rows
    graphs = torch.tensor([0, 9, 18, 27])
    with pytest.raises(RuntimeError, match=r"offsets must be \[rows of Q \+ 1\] = \[28\], got \[27\]"):
        NeighborAttentionFunction.apply(Q, K, V, offsets[:-1], keys, graphs, 0.25)
    with pytest.raises(RuntimeError, match="must agree in H and d"):
        NeighborAttentionFunction.apply(Q[..., :8].contiguous(), K, V, offsets, keys, graphs, 0.25)
    with pytest.raises(RuntimeError, match=r"keys must hold offsets\[-1\] = \d+ entries"):
        NeighborAttentionFunction.apply(Q, K, V, offsets, keys[1:], graphs, 0.25)


def test_a_kernel_that_cannot_be_built_gives_the_reason_and_the_way_out(monkeypatch, tmp_path):
    broken = tmp_path / "neighbor_attention.cpp"
    broken.write_text('#error "deliberately broken"\n')
    monkeypatch.setattr(neighbor_kernel, "SOURCE", broken)
    monkeypatch.setattr(neighbor_kernel, "NAME", "broken_neighbor_attention")  # keeps torch's versions apart
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "build"))
    neighbor_kernel._build_or_load.cache_clear()
    try:
        error = neighbor_kernel.kernel_error()
        with pytest.raises(RuntimeError, match="could not be built") as raised:
            neighbor_kernel.load_kernel()
    finally:
        neighbor_kernel._build_or_load.cache_clear()  # the real kernel for the tests that follow
    assert error == str(raised.value)
    assert str(tmp_path / "build") in error and "model.attention_impl: sdpa needs no compiler" in error


def test_builds_are_kept_apart_by_python_torch_and_instruction_set(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    folder = neighbor_kernel.build_directory()
    assert folder.parent.parent == tmp_path
    assert torch.__version__.replace("+", "_") in folder.parent.name
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "DEFAULT")
    assert neighbor_kernel.compiler_flags() == ["-O3", "-fopenmp"]
    assert neighbor_kernel.build_directory() == folder.with_name("neighbor_attention_baseline")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    assert neighbor_kernel.compiler_flags()[-2:] == ["-mavx2", "-mfma"]
    assert neighbor_kernel.build_directory() == folder.with_name("neighbor_attention_avx2")


def test_every_copy_of_the_code_compiles_the_same_staged_source(monkeypatch, tmp_path):
    """The build names one path whatever checkout asks for it (a Ray job's unpacked working_dir
    too), so ninja sees the same command and rebuilds only when the source's content changes."""
    folder = tmp_path / "build"
    folder.mkdir()
    checkouts = [tmp_path / "checkout" / str(i) / "neighbor_attention.cpp" for i in range(2)]
    for source in checkouts:
        source.parent.mkdir(parents=True)
        source.write_text("// version 1\n")
    monkeypatch.setattr(neighbor_kernel, "SOURCE", checkouts[0])
    staged = neighbor_kernel.staged_source(folder)
    assert staged == folder / "neighbor_attention.cpp" and staged.read_text() == "// version 1\n"
    written = staged.stat().st_mtime_ns
    monkeypatch.setattr(neighbor_kernel, "SOURCE", checkouts[1])
    assert neighbor_kernel.staged_source(folder) == staged
    assert staged.stat().st_mtime_ns == written  # the same content: not rewritten, so nothing to rebuild
    checkouts[1].write_text("// version 2\n")
    assert neighbor_kernel.staged_source(folder).read_text() == "// version 2\n"
    assert sorted(p.name for p in folder.iterdir()) == ["neighbor_attention.cpp"]  # no partial file left


def test_the_loaded_kernel_was_compiled_from_the_staged_source():
    neighbor_kernel.load_kernel()
    folder = neighbor_kernel.build_directory()
    assert f"compile {folder / 'neighbor_attention.cpp'}\n" in (folder / "build.ninja").read_text()
    assert (folder / "neighbor_attention.cpp").read_bytes() == neighbor_kernel.SOURCE.read_bytes()


def test_a_source_staged_meanwhile_by_another_process_is_kept_as_it_is(monkeypatch, tmp_path):
    """Two processes staging into an empty folder at once: the one that comes second leaves the
    first one's file, time included, so the build the first starts is not followed by another."""
    folder = tmp_path / "build"
    folder.mkdir()
    source = tmp_path / "checkout" / "neighbor_attention.cpp"
    source.parent.mkdir()
    source.write_text("// version 1\n")
    monkeypatch.setattr(neighbor_kernel, "SOURCE", source)
    staged = folder / "neighbor_attention.cpp"
    write_bytes = Path.write_bytes

    def the_other_process_stages_first(self, data):
        if self.name.endswith(".partial") and not staged.exists():
            write_bytes(staged, data)
            os.utime(staged, ns=(10**18, 10**18))
        return write_bytes(self, data)

    monkeypatch.setattr(Path, "write_bytes", the_other_process_stages_first)
    assert neighbor_kernel.staged_source(folder) == staged
    assert staged.stat().st_mtime_ns == 10**18 and staged.read_text() == "// version 1\n"
    assert sorted(p.name for p in folder.iterdir()) == ["neighbor_attention.cpp"]  # no partial file left


def test_a_file_system_without_hard_links_still_gets_the_source(monkeypatch, tmp_path):
    def no_links(source, target):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    source = tmp_path / "neighbor_attention.cpp"
    source.write_text("// version 1\n")
    monkeypatch.setattr(neighbor_kernel, "SOURCE", source)
    folder = tmp_path / "build"
    folder.mkdir()
    assert neighbor_kernel.staged_source(folder).read_text() == "// version 1\n"
    assert sorted(p.name for p in folder.iterdir()) == ["neighbor_attention.cpp"]


def test_a_lock_left_by_a_killed_load_does_not_stop_the_next(monkeypatch, tmp_path):
    """torch's file lock, left in the folder by a process killed inside ``load``, used to make every
    later load wait for ever; the kernel's own lock clears it first."""
    import torch.utils.cpp_extension

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    folder = neighbor_kernel.build_directory()
    folder.mkdir(parents=True)
    (folder / neighbor_kernel.TORCH_LOCK).touch()  # what a killed process leaves
    seen = []

    def load(**kwargs):  # stands in for the compiler: notes what torch's lock would find
        seen.append((folder / neighbor_kernel.TORCH_LOCK).exists())

    monkeypatch.setattr(torch.utils.cpp_extension, "load", load)
    neighbor_kernel._build_or_load.cache_clear()
    try:
        assert neighbor_kernel.kernel_error() is None
    finally:
        neighbor_kernel._build_or_load.cache_clear()  # the real kernel for the tests that follow
    assert seen == [False]


def test_the_build_lock_excludes_other_processes_and_dies_with_its_holder(tmp_path):
    import fcntl
    import signal
    import subprocess
    import sys

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from encoder.neighbor_kernel import "
         "build_lock\nwith build_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(600)",
         str(tmp_path)], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    try:
        assert holder.stdout.readline().strip() == "held"
        with open(tmp_path / "build.lock", "a") as handle:
            with pytest.raises(BlockingIOError):  # another process holds it
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        with open(tmp_path / "build.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again: the system released the dead holder's
    finally:
        holder.kill()
        holder.stdout.close()


def test_without_file_locks_torchs_own_lock_alone_guards_the_build(monkeypatch, tmp_path):
    import errno

    def no_locks(*args):
        raise OSError(errno.ENOLCK, "no locks available")

    monkeypatch.setattr(neighbor_kernel.fcntl, "flock", no_locks)
    (tmp_path / neighbor_kernel.TORCH_LOCK).touch()  # unknown: another process may be building
    with neighbor_kernel.build_lock(tmp_path):
        assert (tmp_path / neighbor_kernel.TORCH_LOCK).exists()  # not ours to remove without our lock
