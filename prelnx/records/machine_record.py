"""`machine.json`: the CPU a run trained on, one entry per attempt (a run resumed elsewhere has several; issue 48).
Studies pool seeds trained on different machines; fp32 digits differ between CPU kinds, so a report shows each kind
beside the pool."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from prelnx.atomic import write_text_atomic
from prelnx.machine import cpu_bf16_flags, cpu_name, usable_cores

NAME = "machine.json"


@dataclass(frozen=True)
class MachineRecord:
    cpu: str  # the model name torch's cpuinfo reads (as /proc/cpuinfo's `model name`)
    bf16: tuple[str, ...] | None  # native bf16 features found (empty: none; None: could not tell)
    cores: int  # cores this process may run on
    device: str  # the config's train.device as planned (cpu, cuda, auto)
    time: str

    @property
    def kind(self) -> str:
        """The CPU kind a report groups seeds by: its name and whether it has native bf16."""
        native = "unknown bf16" if self.bf16 is None else ("+".join(self.bf16) if self.bf16 else "no native bf16")
        return f"{self.cpu} ({native})"


def read_machines(run_dir: Path) -> list[MachineRecord]:
    """The attempts' machines, oldest first; [] for a run dir written before this record existed."""
    try:
        entries = json.loads((run_dir / NAME).read_text())["attempts"]
        return [MachineRecord(e["cpu"], None if e["bf16"] is None else tuple(e["bf16"]), int(e["cores"]),
                              e["device"], e["time"]) for e in entries]  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return []


def record_machine(run_dir: Path, device: str) -> MachineRecord:
    """Append this attempt's machine to the run dir's machine.json (atomically) and return it."""
    record = MachineRecord(cpu_name(), cpu_bf16_flags(), usable_cores(), device, time.strftime("%Y-%m-%dT%H:%M:%S"))
    attempts = [asdict(m) for m in read_machines(run_dir)] + [asdict(record)]
    write_text_atomic(run_dir / NAME, json.dumps({"attempts": attempts}, indent=2) + "\n")
    return record
