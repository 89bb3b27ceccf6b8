"""A write interrupted half-way leaves the previous file whole and no temporary file behind."""
import pytest

from rl.atomic import atomic_write, atomic_write_text


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "result.json"
    atomic_write_text(path, "old")

    def half_then_fail(f):
        f.write(b"new, half writ")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, half_then_fail)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
    atomic_write_text(path, "new")
    assert path.read_text() == "new"
