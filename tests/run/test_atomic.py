"""A write interrupted half-way leaves the previous file whole and no temporary file behind."""
import os
import stat

import pytest

from run.atomic import atomic_write, atomic_write_text


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


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_a_written_file_has_the_permissions_a_plain_write_gives(tmp_path, umask):
    before = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "atomic.txt", "x")
        (tmp_path / "plain.txt").write_text("x")
    finally:
        os.umask(before)
    modes = [stat.S_IMODE((tmp_path / name).stat().st_mode) for name in ("atomic.txt", "plain.txt")]
    assert modes == [0o666 & ~umask] * 2
