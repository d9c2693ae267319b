"""Downloads: a progress bar, resume after an interruption (HTTP Range), and size / sha256 verification.

A download goes to `<name>.part` next to its destination and is renamed only once complete and verified,
so a file under its final name is always whole. Run the same command again to resume a broken download.
"""

from __future__ import annotations

import http.client
import os
import re
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from prelnx.data.errors import DataError
from prelnx.data.textio import sha256_file

_BLOCK = 1 << 20
_TIMEOUT_S = 60


@dataclass(frozen=True)
class Download:
    url: str
    filename: str  # path in the download cache, e.g. "multi30k/train.de.gz"
    sha256: str | None = None  # checked when known
    size: int | None = None  # bytes, checked when known (else the server's Content-Length)


def download_dir() -> Path:
    """Where downloads are kept for reuse: $PRELNX_DATA_HOME/downloads (default ~/.cache/prelnx/downloads)."""
    return Path(os.environ.get("PRELNX_DATA_HOME", Path.home() / ".cache" / "prelnx")) / "downloads"


def is_url(text: str) -> bool:
    return re.match(r"^(https?|ftp|file)://", text) is not None


def fetch(download: Download, dest_dir: Path, *, hint: str) -> Path:
    """Download `download` into `dest_dir` (resuming a `.part` file) and verify it; returns the file. `hint` completes
    the no-network message: how to pass a local archive or folder instead."""
    dest = dest_dir / download.filename
    if dest.is_file():
        _verify(dest, download, expected_size=download.size)
        return dest
    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(download.url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        response = urllib.request.urlopen(request, timeout=_TIMEOUT_S)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # nothing left to fetch: the .part file is already whole
            part.rename(dest)
            _verify(dest, download, expected_size=download.size)
            return dest
        raise DataError(f"cannot download {download.url}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", None) or error
        raise DataError(f"cannot download {download.url} ({reason}). Without network access, fetch it on another "
                        f"machine and pass the local copy: {hint}") from None  # fmt: skip
    with response:
        length = response.headers.get("Content-Length")
        resumed = offset > 0 and getattr(response, "status", None) == 206
        if not resumed:
            offset = 0  # the server ignored the Range header (or there was nothing to resume): start afresh
        total = offset + int(length) if length is not None else download.size
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)  # only once the server answered: no empty cache folder
            out = open(part, "ab" if resumed else "wb")  # noqa: SIM115
        except OSError as error:
            raise DataError(f"cannot write {part}: {error.strerror or error}") from None
        bar = tqdm(total=total, initial=offset, desc=dest.name, unit="B", unit_scale=True, unit_divisor=1024,
                   file=sys.stderr, disable=None, mininterval=1.0)  # fmt: skip
        with out, bar:
            try:
                for block in iter(lambda: response.read(_BLOCK), b""):
                    out.write(block)
                    bar.update(len(block))
            except (http.client.HTTPException, OSError) as error:
                out.flush()
                raise DataError(
                    f"download of {download.url} broke off after {part.stat().st_size:,} bytes "
                    f"({type(error).__name__}); run the same command again to resume it"
                ) from None
    got = part.stat().st_size
    if total is not None and got < total:
        raise DataError(
            f"download of {download.url} is incomplete ({got:,} of {total:,} bytes); run the same command again "
            f"to resume it"
        )
    _verify(part, download, expected_size=download.size or total)
    part.rename(dest)
    return dest


def _verify(path: Path, download: Download, *, expected_size: int | None) -> None:
    """Size and checksum; a file that fails is removed so the next run downloads it afresh."""
    size = path.stat().st_size
    if expected_size is not None and size != expected_size:
        path.unlink()
        raise DataError(
            f"{download.url}: got {size:,} bytes, expected {expected_size:,}; the file was removed, run again"
        )
    if download.sha256 is not None:
        digest = sha256_file(path)
        if digest != download.sha256:
            path.unlink()
            raise DataError(
                f"{download.url}: sha256 {digest} does not match the expected {download.sha256}; the file was "
                f"removed, run again to download it afresh (or pass a trusted local copy with --source)"
            )
