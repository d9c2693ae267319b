"""A dataset's recipe, and its input files found in what `--source` names: a URL (downloaded), an archive, or a folder.

Files are asked for by base name and found anywhere inside the archive or folder (also inside the archives a
folder holds, also gzipped: `train.de` as `train.de.gz`); extracted files go to a work folder the caller deletes.
A download has a progress bar, resumes after an interruption (HTTP Range) and is checked (size, sha256); it goes to
`<name>.part`, renamed only once complete and verified: a file under its final name is whole. Downloads are kept
for reuse in $PRELNX_DATA_HOME/downloads (default ~/.cache/prelnx/downloads).
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import sys
import tarfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from prelnx.data.locations import data_home
from prelnx.data.textio import DataError, sha256_file

if TYPE_CHECKING:
    from prelnx.data.workers import Workers

ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar", ".tar.bz2", ".tar.xz", ".zip")
_BLOCK = 1 << 20
_TIMEOUT_S = 60


@dataclass(frozen=True)
class Download:
    url: str
    filename: str  # path in the download cache, e.g. "multi30k/train.de.gz"
    sha256: str | None = None  # checked when known
    size: int | None = None  # bytes, checked when known (else the server's Content-Length)


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
            return fetch(download, dest_dir, hint=hint)  # verified as a file under its final name
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


@dataclass
class SourceFiles:
    """The located input files, and what they came from (for the manifest)."""

    origin: str  # --source, or the default URLs
    paths: dict[str, Path] = field(default_factory=dict)  # requested name -> readable file
    inputs: dict[str, dict] = field(default_factory=dict)  # archive or file name -> {"sha256", "bytes"}

    @classmethod
    def given(cls, origin: str, paths: dict[str, Path], hashes: dict[str, str]) -> SourceFiles:
        """The files a user named (custom, text), used where they are; `hashes`: sha256 by resolved path."""
        inputs = {
            str(path): {"sha256": hashes[str(path.resolve())], "bytes": path.stat().st_size} for path in paths.values()
        }
        return cls(origin, paths, inputs)


@dataclass(frozen=True)
class Recipe:
    """What a dataset module hands to `prepare`: languages, splits, settings, and how to gather and write its text."""

    dataset: str
    languages: tuple[str, str]  # (source, target)
    splits: list[str]  # binarized splits; the first one builds the dictionaries
    settings: dict  # everything that decides the output; the same settings give the same data
    gather: Callable[[str | None, Path], SourceFiles]  # --source, work folder -> the located input files
    write: Callable[[SourceFiles, Path, Workers], None]  # inputs, output folder -> its text/tok/{split}.{lang}
    joined_dictionary: bool = False  # one dictionary for both sides (fairseq-preprocess --joined-dictionary)
    monolingual: bool = False  # one side (task: masked_lm), binarized with fairseq-preprocess --only-source
    after_bpe: Callable[[Path], None] | None = None  # a last step on the output folder's text (wmt14: cleaning)
    bpe_code: Path | None = None  # apply this subword-nmt code file to text/tok/, or
    bpe_merges: int | None = None  # learn this many joint merges on its train split (neither: text/tok/ is the text)
    source: str | None = None  # --source: a URL, an archive or a folder (None: the release's downloads)

    def describe(self) -> str:
        if self.monolingual:
            return f"{self.dataset} (monolingual)"
        return f"{self.dataset} {self.languages[0]}->{self.languages[1]}"


def is_archive(path: Path) -> bool:
    return path.name.endswith(ARCHIVE_SUFFIXES)


def _take(wanted: list[str], available: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(name, what `available` holds under it or its gzip form) for each wanted name found; it leaves `wanted`."""
    for name in list(wanted):
        for candidate in (name, name + ".gz"):
            if candidate in available:
                wanted.remove(name)
                yield name, available[candidate]
                break


def _record(found: SourceFiles, path: Path) -> None:
    found.inputs[path.name] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}


def _take_from_archive(archive: Path, wanted: list[str], work: Path, found: SourceFiles) -> None:
    """The wanted files among the archive's regular files (the shortest path wins when a base name repeats), each
    extracted to work/<archive>/<name>; the archive is opened once."""
    try:
        with (zipfile.ZipFile(archive) if archive.name.endswith(".zip") else tarfile.open(archive)) as handle:
            if isinstance(handle, zipfile.ZipFile):
                names, open_member = [i.filename for i in handle.infolist() if not i.is_dir()], handle.open
            else:
                names, open_member = [m.name for m in handle.getmembers() if m.isfile()], handle.extractfile
            ordered = sorted(names, key=lambda member: (member.count("/"), member), reverse=True)  # the shortest last
            taken = list(_take(wanted, {Path(member).name: member for member in ordered}))
            for name, member in taken:
                found.paths[name] = work / archive.name / Path(member).name
                found.paths[name].parent.mkdir(parents=True, exist_ok=True)
                with open_member(member) as src, open(found.paths[name], "wb") as out:
                    shutil.copyfileobj(src, out)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error) as error:
        raise DataError(f"{archive} is not a readable archive ({error}); download it again") from None
    if taken:
        _record(found, archive)


def _take_from(place: Path, wanted: list[str], work: Path, found: SourceFiles) -> None:
    """The wanted files in an archive, a folder (also inside the archives it holds) or a file (by its name)."""
    if is_archive(place):
        return _take_from_archive(place, wanted, work, found)
    files: dict[str, Path] = {place.name: place} if place.is_file() else {}
    archives: list[Path] = []
    for root, dirs, names in os.walk(place):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            files.setdefault(name, path)
            if is_archive(path):
                archives.append(path)
    for name, path in _take(wanted, files):
        found.paths[name] = path
        _record(found, path)
    for archive in archives:
        if not wanted:
            break
        _take_from_archive(archive, wanted, work, found)


def local_source(source: str | None, hint: str) -> Path | None:
    """The file or folder `--source` names here (None: a URL, or no --source: the release's downloads); refused if it
    is not there or is neither a folder nor an archive (the real run and its dry run alike)."""
    if source is None or re.match(r"^(https?|ftp|file)://", source):
        return None
    place = Path(source).expanduser()
    if not place.exists():
        raise DataError(f"--source {source}: no such file or folder; {hint}")
    if not place.is_dir() and not is_archive(place):
        raise DataError(f"--source {source}: expected a folder or an archive ({', '.join(ARCHIVE_SUFFIXES)})")
    return place


def locate(
    source: str | None,
    needed: Sequence[str],
    *,
    downloads: Sequence[Download],
    work: Path,
    hint: str,
    what: str,
) -> SourceFiles:
    """The files `needed`, from `source` (a URL, archive or folder) or, without one, from `downloads`. `hint` says how
    to pass a local copy (when a download fails); `what` names the expected source in the missing-files message."""
    wanted = list(dict.fromkeys(needed))
    found = SourceFiles(origin=source or " ".join(download.url for download in downloads))
    place = local_source(source, hint)
    if place is None:
        if source is not None:
            downloads = [Download(url=source, filename=Path(source.split("?")[0]).name or "download")]
        places = [fetch(download, data_home() / "downloads", hint=hint) for download in downloads]
    else:
        places = [place]
    for place in places:
        _take_from(place, wanted, work, found)
    if wanted:
        raise DataError(f"{found.origin} lacks {', '.join(wanted)} ({what}); {hint}")
    return found
