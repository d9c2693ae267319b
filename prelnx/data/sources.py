"""Find a recipe's input files in what `--source` names: a URL (downloaded), an archive, or a folder.

A recipe asks for files by base name (e.g. `train.tags.de-en.de`); they are looked up anywhere inside the
archive or folder, so an archive's own folder layout does not matter. A folder may also hold the archives
themselves (as downloaded); files are then extracted from them. A name also matches its gzip form
(`train.de` is found as `train.de.gz`). Extracted files go to a work folder the caller deletes.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prelnx.data.errors import DataError
from prelnx.data.fetch import Download, download_dir, fetch, is_url
from prelnx.data.textio import sha256_file

ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar", ".tar.bz2", ".tar.xz", ".zip")


@dataclass
class SourceFiles:
    """The located input files, and what they came from (for the manifest)."""

    origin: str  # --source, or the default URLs
    paths: dict[str, Path] = field(default_factory=dict)  # requested name -> readable file
    inputs: dict[str, dict] = field(default_factory=dict)  # archive or file name -> {"sha256", "bytes"}


def is_archive(path: Path) -> bool:
    return path.name.endswith(ARCHIVE_SUFFIXES)


def _candidates(name: str) -> tuple[str, str]:
    return name, name + ".gz"


def _record(found: SourceFiles, path: Path) -> None:
    found.inputs[path.name] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}


def _members(archive: Path) -> dict[str, str]:
    """Base name -> member path inside the archive (the shortest path wins when a name repeats)."""
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as handle:
                names = [info.filename for info in handle.infolist() if not info.is_dir()]
        else:
            with tarfile.open(archive) as handle:
                names = [member.name for member in handle.getmembers() if member.isfile()]
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError) as error:
        raise DataError(f"{archive} is not a readable archive ({error}); download it again") from None
    by_name: dict[str, str] = {}
    for member in sorted(names, key=lambda member: (member.count("/"), member)):
        by_name.setdefault(Path(member).name, member)
    return by_name


def _extract(archive: Path, member: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as handle, handle.open(member) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out)
        else:
            with tarfile.open(archive) as handle:
                src = handle.extractfile(member)
                if src is None:
                    raise DataError(f"{archive}: {member} is not a regular file")
                with src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error) as error:
        raise DataError(f"{archive}: cannot extract {member} ({error}); the archive is corrupt") from None


def _take_from_archive(archive: Path, wanted: list[str], work: Path, found: SourceFiles) -> None:
    members = _members(archive)
    used = False
    for name in list(wanted):
        for candidate in _candidates(name):
            if candidate in members:
                dest = work / archive.name / candidate
                _extract(archive, members[candidate], dest)
                found.paths[name] = dest
                wanted.remove(name)
                used = True
                break
    if used:
        _record(found, archive)


def _take_from_folder(folder: Path, wanted: list[str], work: Path, found: SourceFiles) -> None:
    files: dict[str, Path] = {}
    archives: list[Path] = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            files.setdefault(name, path)
            if is_archive(path):
                archives.append(path)
    for name in list(wanted):
        for candidate in _candidates(name):
            if candidate in files:
                found.paths[name] = files[candidate]
                _record(found, files[candidate])
                wanted.remove(name)
                break
    for archive in archives:
        if not wanted:
            break
        _take_from_archive(archive, wanted, work, found)


def locate(
    source: str | None,
    needed: Sequence[str],
    *,
    downloads: Sequence[Download],
    work: Path,
    hint: str,
    what: str,
) -> SourceFiles:
    """The files `needed`, from `source` (a URL, archive or folder) or, without one, from `downloads`.

    `hint` says how to pass a local copy (used when a download fails); `what` names the expected source
    (e.g. "the IWSLT14 release de-en.tgz") in the missing-files message.
    """
    wanted = list(dict.fromkeys(needed))
    found = SourceFiles(origin=source or " ".join(download.url for download in downloads))
    if source is None or is_url(source):
        if source is not None:
            downloads = [Download(url=source, filename=Path(source.split("?")[0]).name or "download")]
        for download in downloads:
            fetched = fetch(download, download_dir(), hint=hint)
            if is_archive(fetched):
                _take_from_archive(fetched, wanted, work, found)
                continue
            for name in [name for name in wanted if fetched.name in _candidates(name)]:
                found.paths[name] = fetched
                _record(found, fetched)
                wanted.remove(name)
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise DataError(f"--source {source}: no such file or folder; {hint}")
        if path.is_dir():
            _take_from_folder(path, wanted, work, found)
        elif is_archive(path):
            _take_from_archive(path, wanted, work, found)
        else:
            raise DataError(f"--source {source}: expected a folder or an archive ({', '.join(ARCHIVE_SUFFIXES)})")
    if wanted:
        raise DataError(f"{found.origin} lacks {', '.join(wanted)} ({what}); {hint}")
    return found
