"""No truncated checkpoint under a name that resume or evaluation would load.

fairseq 0.12 writes the epoch's checkpoint atomically (`<name>.tmp`, then a rename) but then *copies* it to
`checkpoint_best.pt` and `checkpoint_last.pt` with `PathManager.copy`, in place: a full disk or a kill during the
copy leaves a truncated `checkpoint_last.pt`, and a failed save leaves `<name>.tmp`. Patched here, in one place,
rather than forking fairseq: the copy is renamed over the destination once complete, a failed save removes its
temporary file.
"""

import os
import shutil

from fairseq import checkpoint_utils
from fairseq.file_io import PathManager


_original_copy = PathManager.copy
_original_save = checkpoint_utils.torch_persistent_save


def _atomic_copy(src_path: str, dst_path: str, overwrite: bool = False, **kwargs) -> bool:
    if "://" in str(src_path) or "://" in str(dst_path):  # remote storage: leave it to iopath
        return _original_copy(src_path, dst_path, overwrite=overwrite, **kwargs)
    if not overwrite and os.path.exists(dst_path):
        return False
    temporary = f"{dst_path}.tmp"
    try:
        with open(src_path, "rb") as source, open(temporary, "wb") as target:
            shutil.copyfileobj(source, target, length=16 << 20)
            target.flush()
            os.fsync(target.fileno())
        os.replace(temporary, dst_path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    return True


def _save_without_leftovers(obj, filename, async_write: bool = False):
    try:
        return _original_save(obj, filename, async_write)
    except BaseException:
        if isinstance(filename, str) and os.path.exists(filename + ".tmp"):
            os.remove(filename + ".tmp")
        raise


def guard_checkpoint_writes() -> None:
    """Idempotent: install the atomic copy and the leftover cleanup."""
    PathManager.copy = staticmethod(_atomic_copy)
    checkpoint_utils.torch_persistent_save = _save_without_leftovers
