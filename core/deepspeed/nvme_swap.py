"""Where a run's NVMe offload writes its swap files, and taking them away when the run is over.

DeepSpeed writes NVMe offload's tensors under the ``nvme_path`` of its config
(``<nvme_path>/zero_stage_3/optimizer/rank<R>/*.swp``, ``.../<dtype>params/rank<R>/``) and leaves them
there when the process ends. Given the user's folder as it is, two runs sharing it write the same file
names (each run's optimizer state is ``<param id>.tensor.swp``), and every finished run leaves its
optimizer state behind: 16 bytes per trainable weight, 112 GB for a 7B full fine-tune. So each run
writes into a folder of its own inside the user's (``swap_dir``), and the run's supervisor removes it
once every process of the run has exited (``remove_swap``), whatever the ending: a checkpoint holds the
optimizer state a resume needs, and DeepSpeed writes the swap files again from it.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Optional, Union

from zerotui.core.hardware.disks import allocated_bytes

#: The run's folder inside the user's ``nvme_path``: this prefix and the run folder's name.
SWAP_PREFIX = "zerotui-swap-"


def swap_dir(nvme_path: Union[str, Path], run_dir: Optional[Union[str, Path]]) -> Path:
    """The folder the run at ``run_dir`` swaps to; the user's folder itself where there is no run
    (``zerotui config`` exports a ds_config for the user to run as they like)."""
    base = Path(nvme_path).expanduser()
    return base / f"{SWAP_PREFIX}{Path(run_dir).name}" if run_dir is not None else base


def remove_swap(nvme_path: Union[str, Path, None], run_dir: Union[str, Path]) -> Optional[str]:
    """Remove the run's swap folder; a sentence saying what was removed (or could not be), None where
    there was nothing. Only the run's own folder is touched, never ``nvme_path`` itself: a tampered plan
    can point ``nvme_path`` anywhere, and the name ``swap_dir`` gives is all that is removed there. A
    symlink in its place is unlinked, not followed."""
    if nvme_path is None:
        return None
    target = swap_dir(nvme_path, run_dir)
    try:
        if target.is_symlink():
            target.unlink()
            return f"removed the link {target} in place of the NVMe swap folder (not followed)"
        if not target.is_dir():
            return None
        size = allocated_bytes(target)
        shutil.rmtree(target)
    except OSError as err:
        return f"could not remove the NVMe swap folder {target}: {err.strerror or err}; delete it by hand"
    return f"removed the NVMe swap folder {target} ({size / 2**30:.2f} GiB)"
