"""The claims a sweep is judged on, frozen into its sweep.json when it starts (issue 46): paper.yaml's training and
BERT claims, methods.yaml's methods and each user layout file's claims, with their margins, as they read then. The
report decides from this record, never from files edited after the runs began, and shows what changed since
(`changed_claims`). A sweep started before the record existed has none: its report reads the files as they are."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from prelnx.layouts import LayoutFileError, is_file_spec, layout
from prelnx.paper import methods_data, paper_data
from prelnx.records.results import read_index

CLAIMS_KEY = "claims"  # sweep.json's key of the record


def current_claims(layouts: Iterable[str]) -> dict[str, Any]:
    """The claims as the files read now: {"paper": {"training", "bert"}, "methods", "layout_files": {spec: claims}}."""
    files = {}
    for spec in sorted({value for value in layouts if is_file_spec(value)}):
        try:
            files[spec] = [dict(claim) for claim in layout(spec).claims]
        except (KeyError, LayoutFileError):
            continue  # a file that no longer loads: the config validation that runs with the sweep says why
    paper = paper_data()
    record = {"paper": {kind: paper[kind] for kind in ("training", "bert")}, "methods": methods_data(),
              "layout_files": files}  # fmt: skip
    return json.loads(json.dumps(record))  # as JSON reads it back (tuples as lists)


def frozen_claims(sweep_dir: Path, layouts: Iterable[str]) -> dict[str, Any]:
    """The record for sweep.json: the one already frozen there (a resumed sweep keeps the claims it started with),
    else the claims as they read now. `layouts`: the model.layout of every run of the sweep."""
    return read_frozen(sweep_dir) or current_claims(layouts)


def read_frozen(sweep_dir: Path) -> dict[str, Any] | None:
    """sweep.json's frozen claims; None for a sweep without them (or no sweep.json)."""
    record = read_index(sweep_dir).get(CLAIMS_KEY)
    return record if isinstance(record, dict) else None


def _by_id(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    claims = [*record["paper"]["training"], *record["paper"]["bert"]]
    claims += [c for m in record["methods"] for c in (*m.get("claims", ()), *m.get("lm_claims", ()))]
    claims += [{**c, "id": f"{spec}#{c['id']}"} for spec, found in record["layout_files"].items() for c in found]
    return {c["id"]: c for c in claims}


def changed_claims(frozen: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Each claim whose spec differs between the record and the files now, in words (`id: margin_bits 0.5 -> 5`)."""
    before, after = _by_id(frozen), _by_id(now)
    lines = []
    for cid in sorted(set(before) | set(after)):
        old, new = before.get(cid), after.get(cid)
        if old == new:
            continue
        if old is None or new is None:
            lines.append(f"{cid}: {'added since' if old is None else 'removed since'}")
            continue
        keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        lines.append(f"{cid}: " + "; ".join(f"{k} {old.get(k)!r} -> {new.get(k)!r}" for k in keys))
    return lines
