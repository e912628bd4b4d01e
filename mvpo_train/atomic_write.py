"""Files replaced whole: a reader sees the old content or the new, never a torn file.

:func:`write_text_atomic` writes a temporary file beside the target, ``NAME.tmp-<pid>`` (the
process id, so two writers never share one; the name stale-file sweeps such as
:func:`mvpo_train.checkpoint.remove_stale_temporaries` look for), flushes and fsyncs it, then ``os.replace``s the
target; on an error the temporary is removed and the target left as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_text_atomic"]


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """``path`` replaced by ``text`` (UTF-8) whole (temporary file, fsync, ``os.replace``)."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
