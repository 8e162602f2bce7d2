"""Several outputs of one job (kbest_bleu.files.output.atomic_outputs): renamed into place together,
all or none, a signal during the renames waiting for their end; and output names at the file
system's length limit (their temporaries' longer names)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbest_bleu.errors import InputError
from kbest_bleu.files import output
from kbest_bleu.files.temporaries import TEMP_MARK, created_directories


def _old(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    a, b = tmp_path / "x" / "scores.txt", tmp_path / "y" / "features.txt"
    a.write_text("OLD-A")
    b.write_text("OLD-B")
    return a, b


def _leftovers(*dirs: Path) -> list:
    return [p.name for d in dirs if d.exists() for p in d.iterdir() if TEMP_MARK in p.name]


def test_outputs_are_renamed_together(tmp_path):
    a, b = _old(tmp_path)
    with output.atomic_outputs([(a, "--scores"), (b, "--features")]) as (ta, tb):
        ta.write_text("NEW-A")
        tb.write_text("NEW-B")
        assert a.read_text() == "OLD-A" and b.read_text() == "OLD-B"  # nothing lands before the block ends
    assert (a.read_text(), b.read_text()) == ("NEW-A", "NEW-B")
    assert _leftovers(a.parent, b.parent) == []


def test_a_failed_rename_puts_back_the_outputs_already_renamed(tmp_path, monkeypatch):
    """The second rename fails (as when its directory is moved away at that moment): the first
    target gets its previous file back, a new first target is removed, nothing is left beside them."""
    a, b = _old(tmp_path)
    new = tmp_path / "x" / "new.txt"
    real_replace = os.replace

    def replace(src, dst):
        if Path(dst) == b:
            raise OSError(errno.ENOENT, "No such file or directory")
        return real_replace(src, dst)

    monkeypatch.setattr(output.os, "replace", replace)
    for first in (a, new):
        with pytest.raises(OSError, match="--features .*could not write the output.*no output was changed"):
            with output.atomic_outputs([(first, "--scores"), (b, "--features")]) as (ta, tb):
                ta.write_text("NEW-A")
                tb.write_text("NEW-B")
        assert a.read_text() == "OLD-A" and b.read_text() == "OLD-B" and not new.exists()
        assert _leftovers(a.parent, b.parent) == []


def test_a_directory_moved_away_during_the_job_changes_no_output(tmp_path):
    a, b = _old(tmp_path)
    with pytest.raises(OSError, match="--features .*was removed or moved during the job.*no output was changed"):
        with output.atomic_outputs([(a, "--scores"), (b, "--features")]) as (ta, tb):
            ta.write_text("NEW-A")
            tb.write_text("NEW-B")
            b.parent.rename(tmp_path / "moved")
    assert a.read_text() == "OLD-A" and (tmp_path / "moved" / "features.txt").read_text() == "OLD-B"
    # the temporary went with its directory, where the next run removes it once this process is gone
    assert _leftovers(a.parent) == []


def test_one_path_for_two_outputs_is_refused(tmp_path):
    a, _ = _old(tmp_path)
    with pytest.raises(InputError, match="--features .*is also the --scores output"):
        with output.atomic_outputs([(a, "--scores"), (tmp_path / "x" / ".." / "x" / "scores.txt", "--features")]):
            pass
    with output.atomic_outputs([(os.devnull, "-o"), (os.devnull, "--matrix")]) as (x, y):  # discarded twice
        Path(x).write_text("z")
        Path(y).write_text("z")


def test_a_full_disk_names_the_outputs_it_may_concern(tmp_path):
    a, b = _old(tmp_path)
    full = OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(OSError, match="--scores .*--features .*could not write the outputs"):
        with output.atomic_outputs([(a, "--scores"), (b, "--features")]):
            raise full
    with pytest.raises(OSError, match="^.*--scores .*could not write the output .No space") as info:
        with output.atomic_outputs([(a, "--scores")]):
            raise full
    assert "--features" not in str(info.value) and a.read_text() == "OLD-A"


def test_an_output_name_at_the_length_limit_is_written(tmp_path):
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    target = tmp_path / ("o" * (limit - len(".parquet")) + ".parquet")
    with output.atomic_output(target) as tmp:
        assert len(tmp.name.encode()) <= limit and TEMP_MARK in tmp.name
        tmp.write_text("whole")
    assert target.read_text() == "whole" and _leftovers(tmp_path) == []


def test_long_names_that_differ_only_at_the_end_get_their_own_temporaries(tmp_path):
    """Cut to fit, two names alike in their first 230 bytes still get two temporaries (a hash of
    the whole name): one shared temporary lost a previous file in the rollback."""
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    stem = "n" * (limit - len(".1gram.w2v.bin"))
    a, b = tmp_path / f"{stem}.1gram.w2v.bin", tmp_path / f"{stem}.2gram.w2v.bin"
    a.write_text("OLD-1")
    b.write_text("OLD-2")
    with output.atomic_outputs([(a, "-o"), (b, "-o")]) as (ta, tb):
        assert ta != tb
        ta.write_text("NEW-1")
        tb.write_text("NEW-2")
    assert (a.read_text(), b.read_text()) == ("NEW-1", "NEW-2") and _leftovers(tmp_path) == []


def test_the_rollback_holds_for_any_exception_and_leaves_no_backup(tmp_path, monkeypatch):
    """A KeyboardInterrupt in a Python caller's renames (no handlers installed) still puts the
    first output back; a backup whose copy fails (no hard links, a full disk) is not left behind."""
    a, b = _old(tmp_path)
    real_replace = os.replace

    def interrupted(src, dst):
        if Path(dst) == b:
            raise KeyboardInterrupt
        return real_replace(src, dst)

    monkeypatch.setattr(output.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with output.atomic_outputs([(a, "--scores"), (b, "--features")]) as (ta, tb):
            ta.write_text("NEW-A")
            tb.write_text("NEW-B")
    assert (a.read_text(), b.read_text()) == ("OLD-A", "OLD-B") and _leftovers(a.parent, b.parent) == []
    monkeypatch.setattr(output.os, "replace", real_replace)

    def no_link(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    def half_copy(src, dst):
        Path(dst).write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(output.os, "link", no_link)
    monkeypatch.setattr(output.shutil, "copy2", half_copy)
    with pytest.raises(OSError, match="--scores .*could not keep the previous file"):
        with output.atomic_outputs([(a, "--scores"), (b, "--features")]) as (ta, tb):
            ta.write_text("NEW-A")
            tb.write_text("NEW-B")
    assert (a.read_text(), b.read_text()) == ("OLD-A", "OLD-B") and _leftovers(a.parent, b.parent) == []


_SIGNAL_MID_RENAME = """
import os, signal, sys
from pathlib import Path
from kbest_bleu.files import output, temporaries
temporaries.install_signal_handlers()
real = os.replace
def replace(src, dst):
    os.kill(os.getpid(), signal.SIGTERM)  # arrives between the two renames
    real(src, dst)
output.os.replace = replace
a, b = Path(sys.argv[1]), Path(sys.argv[2])
with output.atomic_outputs([(a, "--scores"), (b, "--features")]) as (ta, tb):
    ta.write_text("NEW-A")
    tb.write_text("NEW-B")
print("not reached")
"""


def test_a_signal_during_the_renames_waits_for_their_end(tmp_path):
    a, b = _old(tmp_path)
    run = subprocess.run([sys.executable, "-c", _SIGNAL_MID_RENAME, str(a), str(b)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 128 + 15 and "not reached" not in run.stdout
    assert run.stderr.strip() == "kbest-bleu: interrupted by SIGTERM; the output files were put in place"
    assert (a.read_text(), b.read_text()) == ("NEW-A", "NEW-B") and _leftovers(a.parent, b.parent) == []


def test_directories_made_for_outputs_go_when_the_job_fails(tmp_path):
    with pytest.raises(RuntimeError), created_directories(tmp_path / "a" / "b") as d:
        (d / f".m{TEMP_MARK}1").write_text("")  # removed by its own guard in a real job
        (d / f".m{TEMP_MARK}1").unlink()
        raise RuntimeError("the job failed")
    assert not (tmp_path / "a").exists()
    with created_directories(tmp_path / "a" / "b") as d:
        (d / "model.bin").write_text("kept")
    assert (tmp_path / "a" / "b" / "model.bin").read_text() == "kept"


_SIGNAL_IN_MADE_DIRECTORY = """
import os, signal, sys
from pathlib import Path
from kbest_bleu.files import output, temporaries
temporaries.install_signal_handlers()
with temporaries.created_directories(Path(sys.argv[1]) / "a" / "b") as d:
    with output.atomic_output(d / "model.bin") as tmp:
        tmp.write_text("partial")
        os.kill(os.getpid(), signal.SIGTERM)
"""


def test_a_signal_removes_the_directories_made_for_outputs(tmp_path):
    run = subprocess.run([sys.executable, "-c", _SIGNAL_IN_MADE_DIRECTORY, str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 128 + 15 and "no output written" in run.stderr
    assert list(tmp_path.iterdir()) == []


_SIGNAL_AFTER_THE_JOB = """
import os, signal
from kbest_bleu.files import temporaries
temporaries.install_signal_handlers()
temporaries.job_done()  # as the program calls it once main() returned 0
os.kill(os.getpid(), signal.SIGTERM)
"""


def test_a_signal_after_the_job_does_not_say_no_output_was_written():
    run = subprocess.run([sys.executable, "-c", _SIGNAL_AFTER_THE_JOB], capture_output=True, text=True, timeout=60)
    assert run.returncode == 128 + 15
    assert run.stderr.strip() == "kbest-bleu: interrupted by SIGTERM; the job had ended, its outputs are written"
