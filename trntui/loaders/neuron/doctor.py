"""`trntui info` as a capture doctor: the documented requirements Neuron Explorer puts on a capture, checked from
the directory listing, file sizes and small text logs (nothing is converted or parsed).

Each check is one of the troubleshooting page's entries (aws-neuron/aws-neuron-sdk
`tools/neuron-explorer/troubleshooting.rst`, "Profile processing errors" and "No output / empty profiles") or the
profile-artifacts page's list of what each profile type needs (device: the `.ntff` and every `.neff` it executed;
system: a directory with `trace_info.pb` and `ntrace.pb`). A `Finding` says what is wrong and what to do in one
line; `blocking` findings mean Explorer cannot process the capture as it is (`trntui info` exits 1).

The NTFF layout is not public, so its version is not read from the file: an unsupported version is found in the
tool's own message ("NTFF version 4 is not supported in this version of the tool (supported: 1 - 3)",
aws-neuron-sdk issue 1007) in a log saved beside the capture.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trntui import fsio

if TYPE_CHECKING:
    from trntui.loaders.neuron.discover import Layout, Session

NTFF_LIMIT = 5 * 10**9
"""troubleshooting.rst: "NTFF >5 GB may exceed processing limits"; "Check total size <5 GB"."""
LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
LOG_MAX = 1 << 20
"""Only small text files are searched for the tool's messages (a log beside the capture)."""
NTFF_VERSION_RX = re.compile(r"NTFF version (\d{1,6}) is not supported[^(\n]*\(supported: ([0-9 \-]{1,20})\)")
INCOMPLETE_RX = re.compile(r"ERROR_PROCESS_INCOMPLETE")


@dataclass(frozen=True)
class Finding:
    where: str
    """The file or directory it is about (relative to the inspected path)."""
    problem: str
    """What is wrong and what to do (one line)."""
    blocking: bool = True

    def line(self) -> str:
        return f"{self.where}: {self.problem}"


def _logs(d: Path) -> list[tuple[Path, str]]:
    out = []
    try:
        entries = sorted(os.scandir(d), key=lambda e: e.name)
    except OSError:
        return out
    for e in entries:
        if not e.name.lower().endswith(LOG_SUFFIXES):
            continue
        try:
            st = e.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or st.st_size > LOG_MAX:
                continue
            with fsio.open_regular(e.path, follow_symlinks=False) as fh:
                out.append((Path(e.path), fh.read(LOG_MAX).decode("utf-8", "replace")))
        except (OSError, fsio.FileRefused):
            continue
    return out


def examine(layout: "Layout", rel) -> list[Finding]:
    """Every documented capture problem of the sessions of `layout` (`rel(path)` names a file for the line)."""
    from trntui.loaders.neuron.discover import NEFF_RX, NTFF_RX

    found: list[Finding] = []
    for s in layout.sessions:
        found += _session(s, rel, NEFF_RX, NTFF_RX)
    return found


def _session(s: "Session", rel, neff_rx, ntff_rx) -> list[Finding]:
    out: list[Finding] = []
    where = rel(s.dir)
    names = {f.path.name for f in s.files}
    ntffs = [f for f in s.files if f.kind == "ntff"]
    neffs = [f for f in s.files if f.kind == "neff"]
    # the tool's own messages in a log beside the capture
    for path, text in _logs(s.dir):
        m = NTFF_VERSION_RX.search(text)
        if m:
            out.append(Finding(rel(path), f"NTFF version {m.group(1)} is not supported by the neuron-explorer that "
                               f"processed it (supported: {m.group(2).strip()}): upgrade aws-neuronx-tools (or process "
                               "the capture on a host with a newer one), then run neuron-explorer view again"))
        elif INCOMPLETE_RX.search(text):
            out.append(Finding(rel(path), "ERROR_PROCESS_INCOMPLETE: Explorer stopped before finishing: check that the "
                               "NEFF and NTFF hashes in the file names match, the NTFFs total under 5 GB, the disk has "
                               "space and the files were not damaged in transfer"))
    # NTFF sizes
    for f in ntffs:
        if f.size > NTFF_LIMIT:
            out.append(Finding(rel(f.path), f"NTFF of {f.size / 1e9:.1f} GB: over the 5 GB Neuron Explorer can process "
                               "(ERROR_PROCESS_INCOMPLETE or stuck in PROCESSING): capture fewer NeuronCores or a "
                               "shorter window (NeuronConfig / NEURON_RT_INSPECT_* filters)"))
    if ntffs and all(f.size == 0 for f in ntffs):
        first = ntffs[0].path.name + (f" and {len(ntffs) - 1} more" if len(ntffs) > 1 else "")
        out.append(Finding(where, f"every .ntff is empty (0 bytes: {first}): no execution was captured; warm the "
                           "model up (3+ iterations) before profiling, check device profiling is on, and set "
                           "NEURON_RT_NUM_CORES to the cores actually used"))
    # NEFF / NTFF pairing by the shared hash
    neff_hashes = {}
    for f in neffs:
        m = neff_rx.fullmatch(f.path.name)
        if m:
            neff_hashes[m.group("hash") or m.group("graph")] = f.path.name
    if neff_hashes:
        for f in ntffs:
            m = ntff_rx.fullmatch(f.path.name)
            h = (m.group("hash") or m.group("hash2")) if m else None
            if h and h not in neff_hashes:
                others = ", ".join(sorted(neff_hashes.values())[:2])
                out.append(Finding(rel(f.path), f"NEFF/NTFF hash mismatch: hash {h} matches no NEFF here ({others}: "
                                   "another compilation); Explorer stops with ERROR_PROCESS_INCOMPLETE. Recompile and "
                                   "recapture in one session so the hashes match"))
    # what each profile type needs
    has_ntrace, has_info = "ntrace.pb" in names, "trace_info.pb" in names
    if has_ntrace and not has_info:
        out.append(Finding(where, "ntrace.pb without trace_info.pb: Explorer cannot process the system trace ('No "
                           "metadata found for system profile'); copy trace_info.pb from the capture directory"))
    elif has_info and not has_ntrace:
        out.append(Finding(where, "trace_info.pb without ntrace.pb: the system trace itself is missing; copy ntrace.pb "
                           "from the capture directory"))
    elif not has_ntrace and not has_info and ntffs and neffs and not s.exports and not s.framework:
        ntff = next((f for f in ntffs if f.size), ntffs[0]).path.name
        out.append(Finding(where, "device-only profile (NEFF + NTFF, no trace_info.pb / ntrace.pb): a directory "
                           "upload needs the system trace files; process the files instead: "
                           f"neuron-explorer view -n {neffs[0].path.name} -s {ntff}"))
    return out
